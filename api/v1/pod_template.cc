#include "api/v1/pod_template.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "api/v1/codec/field_decoder.h"

namespace coach::api::v1 {
namespace {

using nlohmann::json;

// One field's type, as a table: the schema is data, and the check one loop over it.
struct Shape {
  enum class Type {
    kString,
    kInteger,
    kBoolean,
    kObject,      // `fields` are checked, other keys left alone
    kList,        // of `item`
    kStringMap,   // labels, nodeSelector
    kQuantities,  // resource name -> quantity (a string like "16Gi" or a number)
  };
  Type type;
  std::vector<std::pair<std::string, std::shared_ptr<const Shape>>> fields;
  std::shared_ptr<const Shape> item;
};
using ShapePtr = std::shared_ptr<const Shape>;
using Fields = std::vector<std::pair<std::string, ShapePtr>>;

ShapePtr Of(Shape::Type type) { return std::make_shared<const Shape>(Shape{type, {}, nullptr}); }
ShapePtr String() { return Of(Shape::Type::kString); }
ShapePtr Integer() { return Of(Shape::Type::kInteger); }
ShapePtr Boolean() { return Of(Shape::Type::kBoolean); }
ShapePtr StringMap() { return Of(Shape::Type::kStringMap); }
ShapePtr Quantities() { return Of(Shape::Type::kQuantities); }
ShapePtr Object(Fields fields = {}) {
  return std::make_shared<const Shape>(Shape{Shape::Type::kObject, std::move(fields), nullptr});
}
ShapePtr List(ShapePtr item) {
  return std::make_shared<const Shape>(Shape{Shape::Type::kList, {}, std::move(item)});
}
ShapePtr ListOfObjects(Fields fields = {}) { return List(Object(std::move(fields))); }

// core/v1 Container (v1.31), every field.
ShapePtr Container() {
  return Object({
      {"name", String()},
      {"image", String()},
      {"command", List(String())},
      {"args", List(String())},
      {"workingDir", String()},
      {"ports", ListOfObjects({{"name", String()},
                               {"hostPort", Integer()},
                               {"containerPort", Integer()},
                               {"protocol", String()},
                               {"hostIP", String()}})},
      {"envFrom",
       ListOfObjects({{"prefix", String()}, {"configMapRef", Object()}, {"secretRef", Object()}})},
      {"env", ListOfObjects({{"name", String()}, {"value", String()}, {"valueFrom", Object()}})},
      {"resources", Object({{"limits", Quantities()},
                            {"requests", Quantities()},
                            {"claims", ListOfObjects({{"name", String()}})}})},
      {"resizePolicy", ListOfObjects({{"resourceName", String()}, {"restartPolicy", String()}})},
      {"restartPolicy", String()},
      {"volumeMounts", ListOfObjects({{"name", String()},
                                      {"readOnly", Boolean()},
                                      {"recursiveReadOnly", String()},
                                      {"mountPath", String()},
                                      {"subPath", String()},
                                      {"mountPropagation", String()},
                                      {"subPathExpr", String()}})},
      {"volumeDevices", ListOfObjects({{"name", String()}, {"devicePath", String()}})},
      {"livenessProbe", Object()},
      {"readinessProbe", Object()},
      {"startupProbe", Object()},
      {"lifecycle", Object()},
      {"terminationMessagePath", String()},
      {"terminationMessagePolicy", String()},
      {"imagePullPolicy", String()},
      {"securityContext", Object()},
      {"stdin", Boolean()},
      {"stdinOnce", Boolean()},
      {"tty", Boolean()},
  });
}

// core/v1 PodTemplateSpec (v1.31): metadata and every PodSpec field.
const Shape& PodTemplate() {
  static const auto* shape = new ShapePtr(Object({
      {"metadata", Object({{"name", String()},
                           {"namespace", String()},
                           {"generateName", String()},
                           {"labels", StringMap()},
                           {"annotations", StringMap()}})},
      {"spec",
       Object({
           {"volumes", ListOfObjects({{"name", String()}})},
           {"initContainers", List(Container())},
           {"containers", List(Container())},
           {"ephemeralContainers", ListOfObjects()},
           {"restartPolicy", String()},
           {"terminationGracePeriodSeconds", Integer()},
           {"activeDeadlineSeconds", Integer()},
           {"dnsPolicy", String()},
           {"nodeSelector", StringMap()},
           {"serviceAccountName", String()},
           {"serviceAccount", String()},
           {"automountServiceAccountToken", Boolean()},
           {"nodeName", String()},
           {"hostNetwork", Boolean()},
           {"hostPID", Boolean()},
           {"hostIPC", Boolean()},
           {"shareProcessNamespace", Boolean()},
           {"securityContext", Object()},
           {"imagePullSecrets", ListOfObjects({{"name", String()}})},
           {"hostname", String()},
           {"subdomain", String()},
           {"affinity", Object()},
           {"schedulerName", String()},
           {"tolerations", ListOfObjects({{"key", String()},
                                          {"operator", String()},
                                          {"value", String()},
                                          {"effect", String()},
                                          {"tolerationSeconds", Integer()}})},
           {"hostAliases", ListOfObjects({{"ip", String()}, {"hostnames", List(String())}})},
           {"priorityClassName", String()},
           {"priority", Integer()},
           {"dnsConfig", Object()},
           {"readinessGates", ListOfObjects({{"conditionType", String()}})},
           {"runtimeClassName", String()},
           {"enableServiceLinks", Boolean()},
           {"preemptionPolicy", String()},
           {"overhead", Quantities()},
           {"topologySpreadConstraints", ListOfObjects({{"maxSkew", Integer()},
                                                        {"topologyKey", String()},
                                                        {"whenUnsatisfiable", String()},
                                                        {"labelSelector", Object()},
                                                        {"minDomains", Integer()},
                                                        {"matchLabelKeys", List(String())}})},
           {"setHostnameAsFQDN", Boolean()},
           {"os", Object({{"name", String()}})},
           {"hostUsers", Boolean()},
           {"schedulingGates", ListOfObjects({{"name", String()}})},
           {"resourceClaims", ListOfObjects({{"name", String()}})},
       })},
  }));
  return **shape;
}

// The checks' recursion follows the schema, never the input, so hostile nesting costs nothing.
class Checker {
 public:
  void Check(const json& v, const Shape& shape, const std::string& path) {
    switch (shape.type) {
      case Shape::Type::kString:
        if (!v.is_string()) Expected(path, "a string", v);
        return;
      case Shape::Type::kInteger:
        if (!v.is_number_integer()) Expected(path, "an integer", v);
        return;
      case Shape::Type::kBoolean:
        if (!v.is_boolean()) Expected(path, "a boolean (true or false)", v);
        return;
      case Shape::Type::kObject:
        if (!v.is_object()) {
          Expected(path, "an object", v);
          return;
        }
        for (const auto& [key, field] : shape.fields) {
          auto it = v.find(key);
          if (it != v.end() && !it->is_null()) Check(*it, *field, absl::StrCat(path, ".", key));
        }
        return;
      case Shape::Type::kList:
        if (!v.is_array()) {
          Expected(path, "a list", v);
          return;
        }
        for (size_t i = 0; i < v.size(); ++i) {
          Check(v[i], *shape.item, absl::StrCat(path, "[", i, "]"));
        }
        return;
      case Shape::Type::kStringMap:
      case Shape::Type::kQuantities: {
        if (!v.is_object()) {
          Expected(path, "an object", v);
          return;
        }
        const bool quantities = shape.type == Shape::Type::kQuantities;
        for (auto it = v.begin(); it != v.end(); ++it) {
          if (it->is_string() || (quantities && it->is_number())) continue;
          Expected(absl::StrCat(path, "[", it.key(), "]"),
                   quantities ? "a quantity (a string like \"16Gi\" or a number)" : "a string",
                   *it);
        }
        return;
      }
    }
  }

  std::vector<FieldError> errors;

 private:
  void Expected(const std::string& path, const char* what, const json& got) {
    errors.push_back({path, absl::StrCat("must be ", what, ", got ", codec::Describe(got))});
  }
};

}  // namespace

std::vector<FieldError> CheckPodTemplateTypes(const json& pod_template, const std::string& path) {
  Checker checker;
  checker.Check(pod_template, PodTemplate(), path);
  return std::move(checker.errors);
}

}  // namespace coach::api::v1
