#include "operator/backend/local/process/pod_process.h"

#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "operator/backend/local/process/kube_expansion.h"
#include "operator/model/replicas.h"

namespace coach::backend::local {
namespace {

using model::Json;

constexpr char kGpuResource[] = "nvidia.com/gpu";
// The init container the reconciler adds to an MPIJob launcher (mpi_objects.cc); it
// copies kubectl for `kubectl exec`, which has no meaning on this host.
constexpr char kMpiKubectlDelivery[] = "kubectl-delivery";

std::string Str(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

bool Optional(const Json& ref) {
  return ref.is_object() && ref.contains("optional") && ref["optional"].is_boolean() &&
         ref["optional"].get<bool>();
}

// "metadata.labels['k']" -> "k" when `path` starts with `prefix` + "['" and ends "']".
std::optional<std::string> Subscript(const std::string& path, const std::string& prefix) {
  const std::string open = prefix + "['";
  if (path.size() < open.size() + 2 || path.compare(0, open.size(), open) != 0 ||
      path.compare(path.size() - 2, 2, "']") != 0) {
    return std::nullopt;
  }
  return path.substr(open.size(), path.size() - open.size() - 2);
}

absl::StatusOr<std::string> FieldRef(const Json& pod, const PodHost& host, const std::string& var,
                                     const std::string& path) {
  const Json& meta = pod.contains("metadata") ? pod["metadata"] : Json::object();
  if (path == "metadata.name") return Str(meta, "name");
  if (path == "metadata.namespace") return Str(meta, "namespace");
  if (path == "status.podIP" || path == "status.hostIP") return host.host_ip;
  if (path == "spec.nodeName") return host.node_name;
  if (path == "spec.serviceAccountName") {
    const std::string sa = pod.contains("spec") ? Str(pod["spec"], "serviceAccountName") : "";
    return sa.empty() ? std::string("default") : sa;
  }
  for (const char* field : {"labels", "annotations"}) {
    if (auto key = Subscript(path, absl::StrCat("metadata.", field))) {
      if (meta.contains(field) && meta[field].is_object()) return Str(meta[field], key->c_str());
      return std::string();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "env ", var, ": valueFrom.fieldRef.fieldPath \"", path,
      "\" is not supported by the local backend (supported: metadata.name, metadata.namespace, "
      "metadata.labels['k'], metadata.annotations['k'], status.podIP, status.hostIP, "
      "spec.nodeName, spec.serviceAccountName)"));
}

// Appends or replaces (the later value wins; the first position stays).
void Set(std::vector<std::pair<std::string, std::string>>& env, const std::string& name,
         std::string value) {
  for (auto& [n, v] : env) {
    if (n == name) {
      v = std::move(value);
      return;
    }
  }
  env.emplace_back(name, std::move(value));
}

std::optional<std::string> Lookup(const std::vector<std::pair<std::string, std::string>>& env,
                                  const std::string& name) {
  for (const auto& [n, v] : env) {
    if (n == name) return v;
  }
  return std::nullopt;
}

absl::Status BuildEnv(const Json& pod, const Json& c, const PodHost& host, PodProcess& out) {
  const std::string where = absl::StrCat("container ", out.container);
  if (c.contains("envFrom") && c["envFrom"].is_array()) {
    for (const Json& src : c["envFrom"]) {
      for (const char* kind : {"configMapRef", "secretRef"}) {
        if (!src.contains(kind)) continue;
        if (Optional(src[kind])) continue;
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": envFrom ", kind, " \"", Str(src[kind], "name"),
            "\" is not supported by the local backend (there are no ConfigMaps or Secrets on "
            "this host); set the variables in env, or mark it optional: true"));
      }
    }
  }
  if (c.contains("env") && c["env"].is_array()) {
    for (const Json& e : c["env"]) {
      const std::string name = Str(e, "name");
      if (name.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": env entry without a name"));
      }
      if (e.contains("valueFrom") && e["valueFrom"].is_object()) {
        const Json& from = e["valueFrom"];
        if (from.contains("fieldRef")) {
          absl::StatusOr<std::string> v =
              FieldRef(pod, host, name, Str(from["fieldRef"], "fieldPath"));
          if (!v.ok())
            return absl::InvalidArgumentError(absl::StrCat(where, ": ", v.status().message()));
          Set(out.env, name, *std::move(v));
          continue;
        }
        bool skip = false;
        for (const char* kind : {"configMapKeyRef", "secretKeyRef", "resourceFieldRef"}) {
          if (!from.contains(kind)) continue;
          if (Optional(from[kind])) {
            skip = true;
            break;
          }
          return absl::InvalidArgumentError(absl::StrCat(
              where, ": env ", name, ": valueFrom.", kind,
              " is not supported by the local backend; give the value directly, or mark it "
              "optional: true"));
        }
        if (skip) continue;
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": env ", name, ": unsupported valueFrom"));
      }
      const std::string raw = Str(e, "value");
      // Kubernetes expands from the entries before this one only.
      std::optional<std::string> value = ExpandKubeVars(
          raw, [&](const std::string& n) { return Lookup(out.env, n); },
          kMaxExecString - name.size() - 2);
      if (!value.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ": env ", name, ": the value (after $(VAR) expansion) is longer than ",
            kMaxExecString, " bytes, more than a process's environment variable may hold"));
      }
      Set(out.env, name, *std::move(value));
    }
  }
  auto meta = pod.contains("metadata") ? pod["metadata"] : Json::object();
  if (!Lookup(out.env, "HOSTNAME")) Set(out.env, "HOSTNAME", Str(meta, "name"));
  for (const char* base : {"PATH", "HOME", "LANG"}) {
    if (Lookup(out.env, base)) continue;
    auto it = host.base_env.find(base);
    if (it != host.base_env.end()) Set(out.env, base, it->second);
  }
  return absl::OkStatus();
}

}  // namespace

const Json* DefaultContainer(const Json& pod, const api::v1::KindInfo& kind) {
  std::optional<size_t> i = reconcile::DefaultContainerIndex(pod, kind);
  if (!i.has_value()) return nullptr;
  return &pod["spec"]["containers"][*i];
}

absl::StatusOr<int> ContainerGpus(const Json& c) {
  if (!c.contains("resources") || !c["resources"].is_object()) return 0;
  const Json& res = c["resources"];
  for (const char* section : {"limits", "requests"}) {
    if (!res.contains(section) || !res[section].is_object() ||
        !res[section].contains(kGpuResource)) {
      continue;
    }
    const Json& q = res[section][kGpuResource];
    int n = -1;
    if (q.is_number_integer()) {
      n = q.get<int>();
    } else if (q.is_string() && !absl::SimpleAtoi(q.get<std::string>(), &n)) {
      n = -1;
    }
    if (n < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("container ", Str(c, "name"), ": resources.", section, "[\"", kGpuResource,
                       "\"] must be a non-negative integer, got ", q.dump()));
    }
    return n;
  }
  return 0;
}

absl::StatusOr<PodProcess> PodToProcess(const Json& pod, const api::v1::KindInfo& kind,
                                        const PodHost& host) {
  if (!pod.is_object() || !pod.contains("spec") || !pod["spec"].is_object()) {
    return absl::InvalidArgumentError("pod has no spec");
  }
  const Json& spec = pod["spec"];
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    for (const Json& ic : spec["initContainers"]) {
      const std::string name = Str(ic, "name");
      if (kind.kind == api::v1::MPI_JOB && name == kMpiKubectlDelivery) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.initContainers[", name,
          "]: the local backend does not run init containers; run that step at the start of "
          "the container's command instead"));
    }
  }
  std::optional<size_t> index = reconcile::DefaultContainerIndex(pod, kind);
  if (!index.has_value()) return absl::InvalidArgumentError("pod has no containers");
  const Json& containers = spec["containers"];
  const Json& c = containers[*index];
  PodProcess out;
  out.container = Str(c, "name");
  for (size_t i = 0; i < containers.size(); ++i) {
    if (i != *index) out.ignored_containers.push_back(Str(containers[i], "name"));
  }
  if (absl::Status s = BuildEnv(pod, c, host, out); !s.ok()) return s;
  auto expand = [&](const std::string& s) {
    return ExpandKubeVars(
        s, [&](const std::string& n) { return Lookup(out.env, n); }, kMaxExecString - 1);
  };
  for (const char* field : {"command", "args"}) {
    if (!c.contains(field)) continue;
    if (!c[field].is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("container ", out.container, ": ", field, " must be a list of strings"));
    }
    if (std::string(field) == "args" && out.argv.empty()) break;
    for (const Json& a : c[field]) {
      if (!a.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("container ", out.container, ": ", field, " must be a list of strings"));
      }
      std::optional<std::string> arg = expand(a.get<std::string>());
      if (!arg.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("container ", out.container, ": ", field, "[", out.argv.size(),
                         "]: longer than ", kMaxExecString,
                         " bytes (after $(VAR) expansion), more than a "
                         "process's argument may hold"));
      }
      out.argv.push_back(*std::move(arg));
    }
  }
  if (out.argv.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "container ", out.container,
        ": the local backend runs the container's command; this pod has none (the image's "
        "entrypoint is not available locally: set command)"));
  }
  out.working_dir = Str(c, "workingDir");
  if (!out.working_dir.empty() && out.working_dir[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("container ", out.container, ": workingDir \"",
                                                   out.working_dir, "\" must be absolute"));
  }
  size_t exec_bytes = 0;
  for (const std::string& a : out.argv) exec_bytes += a.size() + 1 + sizeof(char*);
  for (const auto& [name, value] : out.env) {
    exec_bytes += name.size() + value.size() + 2 + sizeof(char*);
  }
  if (exec_bytes > kMaxExecBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "container ", out.container, ": command, args and env take ", exec_bytes,
        " bytes together, more than the ", kMaxExecBytes, " a process may start with"));
  }
  absl::StatusOr<int> gpus = ContainerGpus(c);
  if (!gpus.ok()) return gpus.status();
  out.gpus = *gpus;
  return out;
}

std::vector<std::string> EnvEntries(const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [n, v] : env) out.push_back(absl::StrCat(n, "=", v));
  return out;
}

}  // namespace coach::backend::local
