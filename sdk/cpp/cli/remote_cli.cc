#include "sdk/cpp/cli/remote_cli.h"

#include <unistd.h>

#include <iostream>

#include "sdk/cpp/cli/exit_codes.h"
#include "sdk/cpp/cli/kube_token.h"
#include "sdk/cpp/cli/manifest_input.h"

namespace coach::cli {

void RegisterRemoteCommands(CLI::App& app, RemoteCli* cli) {
  RemoteOptions& o = cli->options;
  sdk::ConnectionOptions& c = o.connection;
  app.add_option("--server", c.server,
                 "coach-operator address (env COACH_SERVER; default 127.0.0.1:7450)");
  app.add_option("--token-file", c.token_file,
                 "file holding the bearer token (env COACH_TOKEN, COACH_TOKEN_FILE)");
  app.add_option("--kubeconfig", cli->kubeconfig,
                 "present this kubeconfig's user token (operator --api-auth=kubernetes; env "
                 "COACH_KUBECONFIG)")
      ->envname("COACH_KUBECONFIG");
  app.add_option("--context", cli->context, "with --kubeconfig: this context, not the current");
  app.add_option("--tls-ca", c.tls_ca, "CA bundle (PEM); enables TLS (env COACH_TLS_CA)");
  app.add_option("--tls-cert", c.tls_cert,
                 "client certificate for mutual TLS (env COACH_TLS_CERT)");
  app.add_option("--tls-key", c.tls_key, "client key for mutual TLS (env COACH_TLS_KEY)");
  app.add_option("--tls-server-name", c.tls_server_name,
                 "name expected in the server's certificate (env COACH_TLS_SERVER_NAME)");

  auto command = [&app](const char* name, const char* help) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->fallthrough();  // the global flags may follow the subcommand
    return sub;
  };
  auto add_namespace = [&o](CLI::App* sub) {
    sub->add_option("-n,--namespace", o.namespace_, "namespace (default: default)")
        ->each([&o](const std::string&) { o.namespace_given = true; });
  };
  auto add_job = [&o](CLI::App* sub) { sub->add_option("JOB", o.job, "job name")->required(); };
  auto add_output = [&o](CLI::App* sub) {
    sub->add_option("-o,--output", o.output, "json or yaml instead of a table")
        ->check(CLI::IsMember({"json", "yaml"}));
  };

  cli->submit = command("submit", "validate a manifest locally, then create its job(s)");
  cli->submit->add_option("-f,--filename", o.file, "manifest file (YAML or JSON), - for stdin")
      ->required();
  cli->submit->add_flag("--wait", o.wait, "wait until the job Succeeded (exit 4 if it Failed)");
  cli->submit->add_option("--timeout", o.timeout, "with --wait: give up after this (default 10m)");
  add_namespace(cli->submit);

  cli->get = command("get", "show one job");
  add_job(cli->get);
  add_namespace(cli->get);
  add_output(cli->get);

  cli->list = command("list", "list jobs");
  add_namespace(cli->list);
  cli->list->add_flag("-A,--all-namespaces", o.all_namespaces, "jobs of every namespace");
  cli->list->add_option("-l,--selector", o.selector, "label selector, e.g. team=nlp,tier!=dev");
  add_output(cli->list);

  cli->describe = command("describe", "conditions, replicas and recent events of a job");
  add_job(cli->describe);
  add_namespace(cli->describe);

  cli->logs = command("logs", "print a job's logs");
  add_job(cli->logs);
  add_namespace(cli->logs);
  cli->logs->add_option("--replica", o.replica, "one replica, e.g. master-0 (default: all)");
  cli->logs->add_flag("-f,--follow", o.follow, "keep streaming until the replica ends");
  cli->logs->add_option("--tail", o.tail, "only the last N lines");
  cli->logs
      ->add_option("--attempt", o.attempt,
                   "this attempt's logs (coach history lists them; default: the current)")
      ->type_name("N");
  cli->logs->add_option("--uid", o.uid, "a deleted job's kept logs (coach history --deleted)")
      ->type_name("UID");

  cli->history = command("history", "a job's attempts: when, how long, why each ended, where");
  cli->history->add_option("JOB", o.job, "job name (optional with --deleted)");
  add_namespace(cli->history);
  cli->history->add_flag("--deleted", o.deleted, "the kept histories of deleted jobs");
  cli->history->add_flag("-A,--all-namespaces", o.all_namespaces,
                         "with --deleted: of every namespace");
  cli->history->add_option("--uid", o.uid, "the deleted job of this uid (implies --deleted)")
      ->type_name("UID");
  add_output(cli->history);

  cli->wait = command("wait", "wait for a job condition");
  add_job(cli->wait);
  add_namespace(cli->wait);
  cli->wait->add_option("--for", o.for_condition, "Succeeded, Failed, Running or Created")
      ->required();
  cli->wait->add_option("--timeout", o.timeout, "give up after this (default 10m)");

  cli->delete_ = command("delete", "delete a job");
  add_job(cli->delete_);
  add_namespace(cli->delete_);
  cli->suspend = command("suspend", "suspend a job (its replicas stop)");
  add_job(cli->suspend);
  add_namespace(cli->suspend);
  cli->resume = command("resume", "resume a suspended job");
  add_job(cli->resume);
  add_namespace(cli->resume);
}

std::optional<int> RunRemoteCommand(const RemoteCli& cli, std::ostream& out, std::ostream& err) {
  RemoteEnv env;
  env.out = &out;
  env.err = &err;
  env.interactive = &out == &std::cout && isatty(STDOUT_FILENO) == 1;
  env.read_input = ReadInput;
  env.load_jobs = LoadJobs;
  env.make_client = sdk::TrainingClient::Create;
  RemoteOptions o = cli.options;
  if (!cli.kubeconfig.empty()) {
    if (absl::Status s = UseKubeconfigToken(cli.kubeconfig, cli.context, &o.connection); !s.ok()) {
      err << "error: " << s.message() << "\n";
      return kExitInvalid;
    }
  }
  if (cli.submit->parsed()) return RunSubmit(o, env);
  if (cli.get->parsed()) return RunGet(o, env);
  if (cli.list->parsed()) return RunList(o, env);
  if (cli.describe->parsed()) return RunDescribe(o, env);
  if (cli.logs->parsed()) return RunLogs(o, env);
  if (cli.history->parsed()) return RunHistory(o, env);
  if (cli.wait->parsed()) return RunWait(o, env);
  if (cli.delete_->parsed()) return RunDelete(o, env);
  if (cli.suspend->parsed()) return RunSuspend(o, env);
  if (cli.resume->parsed()) return RunResume(o, env);
  return std::nullopt;
}

}  // namespace coach::cli
