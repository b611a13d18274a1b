#include "launcher/launch_config.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace coach::launcher {

std::string EnvValue(const EnvMap& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}
namespace {

constexpr int kDefaultMasterPort = 29500;
// A typo like --nproc-per-node=80000 should fail, not fork-bomb the node.
constexpr int kMaxNprocPerNode = 1024;

// A value and the name of the flag or variable it came from, so errors can name it.
struct Sourced {
  std::string value;
  std::string source;
};

std::optional<std::string> Lookup(const EnvMap& env, const std::string& name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

// The flag when given, else the first variable present in `vars`.
std::optional<Sourced> Pick(const CLI::Option* flag, const std::string& flag_value,
                            const EnvMap& env, const std::vector<std::string>& vars) {
  if (flag->count() > 0) return Sourced{flag_value, flag->get_name()};
  for (const std::string& var : vars) {
    if (auto v = Lookup(env, var)) return Sourced{*v, var};
  }
  return std::nullopt;
}

absl::Status Invalid(const std::string& source, const std::string& what, const std::string& got) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what, ", got \"", got, "\""));
}

absl::StatusOr<int> ParseInt(const Sourced& s, int min, int max, const std::string& what) {
  int v = 0;
  const std::string trimmed(absl::StripAsciiWhitespace(s.value));
  if (trimmed.empty() || !absl::SimpleAtoi(trimmed, &v) || v < min || v > max) {
    return Invalid(s.source, what, s.value);
  }
  return v;
}

absl::StatusOr<int> ParsePort(const Sourced& s) {
  return ParseInt(s, 1, 65535, "must be a port number in 1..65535");
}

absl::StatusOr<absl::Duration> ParseDurationFlag(const Sourced& s, bool allow_zero) {
  absl::Duration d;
  int seconds = 0;
  if (absl::SimpleAtoi(s.value, &seconds)) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(s.value, &d)) {
    return Invalid(s.source, "must be a duration like 30s or 5m", s.value);
  }
  if (d < absl::ZeroDuration() || (!allow_zero && d == absl::ZeroDuration()) ||
      d == absl::InfiniteDuration()) {
    return Invalid(s.source,
                   allow_zero ? "must be a finite duration >= 0" : "must be a finite duration > 0",
                   s.value);
  }
  return d;
}

absl::StatusOr<int> ParseNnodes(const Sourced& s) {
  const std::vector<std::string> parts = absl::StrSplit(s.value, ':');
  constexpr char kWhat[] = "must be a positive integer N or MIN:MAX";
  if (parts.size() == 1) return ParseInt(s, 1, 1 << 20, kWhat);
  if (parts.size() != 2) return Invalid(s.source, kWhat, s.value);
  int lo = 0, hi = 0;
  if (!absl::SimpleAtoi(parts[0], &lo) || !absl::SimpleAtoi(parts[1], &hi) || lo < 1 || hi < lo) {
    return Invalid(s.source, kWhat, s.value);
  }
  if (lo != hi) {
    return Invalid(s.source,
                   "elastic MIN:MAX with MIN != MAX needs dynamic rendezvous, which coach-launch "
                   "does not do (use MIN == MAX or torchrun)",
                   s.value);
  }
  return lo;
}

absl::StatusOr<int> ParseNproc(const Sourced& s, const GpuDiscovery& gpus, int cpu_count) {
  const std::string v(absl::StripAsciiWhitespace(s.value));
  if (v == "cpu") return cpu_count;
  if (v == "auto" || v == "gpu") {
    ASSIGN_OR_RETURN(int n, gpus.CountGpus());
    if (n > 0) return n;
    if (v == "auto") return 1;
    return Invalid(s.source, "is gpu but no GPU is visible (/dev/nvidiaN, CUDA_VISIBLE_DEVICES)",
                   s.value);
  }
  return ParseInt(s, 1, kMaxNprocPerNode,
                  absl::StrCat("must be auto, cpu, gpu or a positive integer (at most ",
                               kMaxNprocPerNode, ")"));
}

absl::StatusOr<std::string> ParseHost(const Sourced& s) {
  const std::string& v = s.value;
  if (v.empty()) return Invalid(s.source, "must be a host name or address", v);
  for (char c : v) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '/') {
      return Invalid(s.source, "must be a host name or address", v);
    }
  }
  return v;
}

// Single-process mode: the addresses the operator's per-framework env points at.
absl::Status AddFrameworkPeers(const EnvMap& env, std::vector<PeerAddress>* peers) {
  if (auto tf = Lookup(env, "TF_CONFIG")) {
    nlohmann::json j = nlohmann::json::parse(*tf, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
      return Invalid("TF_CONFIG", "must be a JSON object", *tf);
    }
    std::string own;
    if (j.contains("task")) {
      const auto& task = j["task"];
      if (!task.is_object() || !task.contains("type") || !task["type"].is_string() ||
          !task.contains("index") || !task["index"].is_number_integer()) {
        return absl::InvalidArgumentError(
            "TF_CONFIG: task must be {\"type\": string, \"index\": integer}");
      }
      const std::string type = task["type"];
      const int index = task["index"];
      if (j.contains("cluster") && j["cluster"].is_object() && j["cluster"].contains(type)) {
        const auto& members = j["cluster"][type];
        if (members.is_array() && index >= 0 && index < static_cast<int>(members.size()) &&
            members[index].is_string()) {
          own = members[index];
        } else if (members.is_object() && members.contains(std::to_string(index)) &&
                   members[std::to_string(index)].is_string()) {
          own = members[std::to_string(index)];
        }
      }
    }
    if (j.contains("cluster")) {
      const auto& cluster = j["cluster"];
      if (!cluster.is_object())
        return absl::InvalidArgumentError("TF_CONFIG: cluster must be an object");
      for (const auto& [type, members] : cluster.items()) {
        if (!members.is_array() && !members.is_object()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "TF_CONFIG: cluster.", type, " must be a list of host:port (or an index map)"));
        }
        for (const auto& member : members) {
          if (!member.is_string()) {
            return absl::InvalidArgumentError(
                absl::StrCat("TF_CONFIG: cluster.", type, " entries must be strings"));
          }
          const std::string addr = member;
          if (addr == own) continue;
          ASSIGN_OR_RETURN(PeerAddress p, ParseHostPort(addr, "TF_CONFIG"));
          p.connect = false;
          peers->push_back(std::move(p));
        }
      }
    }
  }

  if (auto coord = Lookup(env, "COORDINATOR_ADDRESS")) {
    bool is_coordinator = false;
    if (auto id = Lookup(env, "PROCESS_ID")) {
      ASSIGN_OR_RETURN(int pid,
                       ParseInt({*id, "PROCESS_ID"}, 0, 1 << 30, "must be a non-negative integer"));
      is_coordinator = pid == 0;
    }
    PeerAddress p;
    if (auto port = Lookup(env, "COORDINATOR_PORT")) {
      ASSIGN_OR_RETURN(p.host, ParseHost({*coord, "COORDINATOR_ADDRESS"}));
      ASSIGN_OR_RETURN(p.port, ParsePort({*port, "COORDINATOR_PORT"}));
      p.source = "COORDINATOR_ADDRESS";
    } else {
      // jax.distributed.initialize itself takes "host:port" in one value.
      ASSIGN_OR_RETURN(p, ParseHostPort(*coord, "COORDINATOR_ADDRESS"));
    }
    if (!is_coordinator) peers->push_back(std::move(p));
  }

  if (auto paddle = Lookup(env, "PADDLE_MASTER")) {
    ASSIGN_OR_RETURN(PeerAddress p, ParseHostPort(*paddle, "PADDLE_MASTER"));
    const bool own = p.host == Lookup(env, "POD_IP_DUMMY").value_or("") ||
                     p.host == Lookup(env, "HOSTNAME").value_or("");
    if (!own) peers->push_back(std::move(p));
  }

  if (auto addr = Lookup(env, "MASTER_ADDR")) {
    auto port = Lookup(env, "MASTER_PORT");
    if (!port) return absl::InvalidArgumentError("MASTER_PORT: required when MASTER_ADDR is set");
    PeerAddress p;
    ASSIGN_OR_RETURN(p.host, ParseHost({*addr, "MASTER_ADDR"}));
    ASSIGN_OR_RETURN(p.port, ParsePort({*port, "MASTER_PORT"}));
    p.source = "MASTER_ADDR";
    bool is_master = false;
    if (auto rank = Lookup(env, "RANK")) {
      ASSIGN_OR_RETURN(int r,
                       ParseInt({*rank, "RANK"}, 0, 1 << 30, "must be a non-negative integer"));
      is_master = r == 0;
    }
    if (!is_master) peers->push_back(std::move(p));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ParseSwitch(const Sourced& s) {
  const std::string v = absl::AsciiStrToLower(absl::StripAsciiWhitespace(s.value));
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v.empty() || v == "0" || v == "false" || v == "no" || v == "off") return false;
  return Invalid(s.source, "must be 1/true/yes/on or 0/false/no/off", s.value);
}

// A name getaddrinfo can be asked about without surprises: no spaces, no shell or URL syntax.
absl::Status ValidateDnsName(const std::string& host, const std::string& source) {
  constexpr char kWhat[] =
      "must be a DNS name (letters, digits, '-', '_', '.'; labels of 1..63 characters, at "
      "most 253 in all)";
  std::string name = host;
  if (!name.empty() && name.back() == '.') name.pop_back();  // a fully qualified "svc.ns."
  if (name.empty() || name.size() > 253) return Invalid(source, kWhat, host);
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (label.empty() || label.size() > 63) return Invalid(source, kWhat, host);
    for (char c : label) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
        return Invalid(source, kWhat, host);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

bool IsHostWaitInvocation(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--") return false;
    if (a == "--wait-for-host" || a == "--wait_for_host" ||
        absl::StartsWith(a, "--wait-for-host=") || absl::StartsWith(a, "--wait_for_host=")) {
      return true;
    }
  }
  return false;
}

absl::StatusOr<HostWaitConfig> ParseHostWaitConfig(const std::vector<std::string>& args) {
  // By hand rather than with CLI11: exactly one value per --wait-for-host, and nothing else.
  HostWaitConfig config;
  bool timeout_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string name = a, value;
    const size_t eq = a.find('=');
    if (absl::StartsWith(a, "--") && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (a == "--wait-for-host" || a == "--wait_for_host" || a == "--peer-timeout" ||
               a == "--peer_timeout") {
      if (i + 1 == args.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flags: ", a, " needs a value"));
      }
      value = args[++i];
    }
    if (name == "--wait-for-host" || name == "--wait_for_host") {
      RETURN_IF_ERROR(ValidateDnsName(value, "--wait-for-host"));
      config.hosts.push_back(value);
    } else if (name == "--peer-timeout" || name == "--peer_timeout") {
      if (timeout_given) {
        return absl::InvalidArgumentError("flags: --peer-timeout given more than once");
      }
      timeout_given = true;
      ASSIGN_OR_RETURN(config.timeout,
                       ParseDurationFlag({value, "--peer-timeout"}, /*allow_zero=*/false));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "flags: with --wait-for-host only --wait-for-host HOST and --peer-timeout D are "
          "accepted (no program is run), got \"",
          a, "\""));
    }
  }
  if (config.hosts.empty()) {
    return absl::InvalidArgumentError("--wait-for-host: at least one HOST is required");
  }
  return config;
}

absl::StatusOr<PeerAddress> ParseHostPort(const std::string& value, const std::string& source) {
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Invalid(source, "must be host:port", value);
  }
  PeerAddress p;
  p.source = source;
  std::string host = value.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);  // [::1]:80
  }
  ASSIGN_OR_RETURN(p.host, ParseHost({host, source}));
  const std::string port = value.substr(colon + 1);
  int v = 0;
  if (!absl::SimpleAtoi(port, &v) || v < 1 || v > 65535) {
    return Invalid(source, "must be host:port with a port in 1..65535", value);
  }
  p.port = v;
  return p;
}

absl::StatusOr<LaunchConfig> ParseLaunchConfig(const std::vector<std::string>& args,
                                               const EnvMap& env, const GpuDiscovery& gpus,
                                               int cpu_count) {
  // Split at "--" ourselves; without one, the first non-flag word starts the program.
  std::vector<std::string> flag_args = args;
  std::vector<std::string> program;
  bool explicit_separator = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      flag_args.assign(args.begin(), args.begin() + i);
      program.assign(args.begin() + i + 1, args.end());
      explicit_separator = true;
      break;
    }
  }

  CLI::App app("coach-launch");
  app.set_help_flag();  // main handles --help before parsing
  app.prefix_command(!explicit_separator);
  std::string nnodes, node_rank, nproc, master_addr, master_port, rdzv_id;
  std::string peer_timeout, grace_period, prefix_template;
  bool no_wait = false, no_python = false, rank_prefix = false;
  auto* nnodes_opt = app.add_option("--nnodes", nnodes);
  auto* node_rank_opt = app.add_option("--node-rank,--node_rank", node_rank);
  auto* nproc_opt = app.add_option("--nproc-per-node,--nproc_per_node", nproc);
  auto* addr_opt = app.add_option("--master-addr,--master_addr", master_addr);
  auto* port_opt = app.add_option("--master-port,--master_port", master_port);
  auto* rdzv_opt = app.add_option("--rdzv-id,--rdzv_id", rdzv_id);
  auto* timeout_opt = app.add_option("--peer-timeout,--peer_timeout", peer_timeout);
  auto* grace_opt = app.add_option("--grace-period,--grace_period", grace_period);
  app.add_flag("--no-wait,--no_wait", no_wait);
  app.add_flag("--no-python,--no_python", no_python);
  auto* template_opt =
      app.add_option("--log-line-prefix-template,--log_line_prefix_template", prefix_template);
  auto* rank_prefix_opt = app.add_flag("--log-line-prefix,--log_line_prefix", rank_prefix);

  std::vector<const char*> argv = {"coach-launch"};
  for (const std::string& a : flag_args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(absl::StrCat("flags: ", e.what()));
  }
  if (!explicit_separator) program = app.remaining();
  if (program.empty()) {
    return absl::InvalidArgumentError(
        "PROGRAM: missing; usage: coach-launch [flags] -- PROGRAM ARGS...");
  }
  if (!explicit_separator && absl::StartsWith(program[0], "-")) {
    return absl::InvalidArgumentError(absl::StrCat("flags: unknown flag ", program[0]));
  }

  LaunchConfig config;
  if (timeout_opt->count() > 0) {
    ASSIGN_OR_RETURN(config.peer_timeout,
                     ParseDurationFlag({peer_timeout, "--peer-timeout"}, /*allow_zero=*/false));
  }
  if (grace_opt->count() > 0) {
    ASSIGN_OR_RETURN(config.grace_period,
                     ParseDurationFlag({grace_period, "--grace-period"}, /*allow_zero=*/true));
  }
  config.wait_for_peers = !no_wait;
  // Flags before variables; within each, the template before the shorthand.
  if (template_opt->count() > 0) {
    config.log_line_prefix_template = prefix_template;
  } else if (rank_prefix_opt->count() > 0) {
    config.log_line_prefix_template = kRankLinePrefixTemplate;
  } else if (auto t =
                 Pick(template_opt, prefix_template, env,
                      {"PET_LOG_LINE_PREFIX_TEMPLATE", "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"})) {
    config.log_line_prefix_template = t->value;
  } else if (auto v = Lookup(env, "COACH_LOG_LINE_PREFIX")) {
    ASSIGN_OR_RETURN(bool on, ParseSwitch({*v, "COACH_LOG_LINE_PREFIX"}));
    if (on) config.log_line_prefix_template = kRankLinePrefixTemplate;
  }

  const bool torch_flag = nnodes_opt->count() + node_rank_opt->count() + nproc_opt->count() +
                              addr_opt->count() + port_opt->count() + rdzv_opt->count() >
                          0;
  bool torch_env = false;
  for (const char* var : {"PET_NNODES", "PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR",
                          "PET_MASTER_PORT"}) {
    torch_env = torch_env || env.count(var) > 0;
  }
  config.mode = torch_flag || torch_env ? LaunchMode::kTorch : LaunchMode::kSingle;

  if (config.mode == LaunchMode::kSingle) {
    RETURN_IF_ERROR(AddFrameworkPeers(env, &config.peers));
  } else {
    if (auto s = Pick(nnodes_opt, nnodes, env, {"PET_NNODES"})) {
      ASSIGN_OR_RETURN(config.nnodes, ParseNnodes(*s));
    }
    if (auto s = Pick(node_rank_opt, node_rank, env, {"PET_NODE_RANK", "RANK"})) {
      ASSIGN_OR_RETURN(config.node_rank,
                       ParseInt(*s, 0, config.nnodes - 1,
                                absl::StrCat("must be an integer in [0, ", config.nnodes,
                                             ") (nnodes is ", config.nnodes, ")")));
    } else if (config.nnodes > 1) {
      return absl::InvalidArgumentError(
          "--node-rank: required when nnodes > 1 (set --node-rank, PET_NODE_RANK or RANK)");
    }
    Sourced nproc_value = Pick(nproc_opt, nproc, env, {"PET_NPROC_PER_NODE"})
                              .value_or(Sourced{"auto", "--nproc-per-node"});
    ASSIGN_OR_RETURN(config.nproc_per_node, ParseNproc(nproc_value, gpus, cpu_count));

    std::string addr_source = "--master-addr";
    if (auto s = Pick(addr_opt, master_addr, env, {"PET_MASTER_ADDR", "MASTER_ADDR"})) {
      ASSIGN_OR_RETURN(config.master_addr, ParseHost(*s));
      addr_source = s->source;
    } else if (config.nnodes > 1) {
      return absl::InvalidArgumentError(
          "--master-addr: required when nnodes > 1 (set --master-addr, PET_MASTER_ADDR or "
          "MASTER_ADDR)");
    } else {
      config.master_addr = "127.0.0.1";
    }
    if (auto s = Pick(port_opt, master_port, env, {"PET_MASTER_PORT", "MASTER_PORT"})) {
      ASSIGN_OR_RETURN(config.master_port, ParsePort(*s));
    } else if (config.nnodes > 1) {
      return absl::InvalidArgumentError(
          "--master-port: required when nnodes > 1 (set --master-port, PET_MASTER_PORT or "
          "MASTER_PORT)");
    } else {
      config.master_port = kDefaultMasterPort;
    }
    if (auto s = Pick(rdzv_opt, rdzv_id, env, {"PET_RDZV_ID"})) {
      if (s->value.empty()) return Invalid(s->source, "must not be empty", s->value);
      config.run_id = s->value;
    }
    if (config.nnodes > 1 && config.node_rank != 0) {
      config.peers.push_back(
          PeerAddress{config.master_addr, config.master_port, /*connect=*/true, addr_source});
    }
  }

  if (absl::EndsWith(program[0], ".py") && !no_python) {
    program.insert(program.begin(), {"python3", "-u"});
  }
  config.program = std::move(program);
  return config;
}

}  // namespace coach::launcher
