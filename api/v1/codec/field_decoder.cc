#include "api/v1/codec/field_decoder.h"

namespace coach::api::v1::codec {

using nlohmann::json;

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

std::string Describe(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return absl::StrCat("boolean ", v.dump());
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return absl::StrCat("integer ", v.dump());
    case json::value_t::number_float:
      return absl::StrCat("number ", v.dump());
    case json::value_t::string: {
      std::string s = v.get<std::string>();
      if (s.size() > 64) s = s.substr(0, 64) + "...";
      return absl::StrCat("string ", json(s).dump(-1, ' ', false, json::error_handler_t::replace));
    }
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    default:
      return "an unsupported value";
  }
}

}  // namespace coach::api::v1::codec
