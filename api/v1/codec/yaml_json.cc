#include "api/v1/codec/yaml_json.h"

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

namespace coach::api::v1::codec {
namespace {

using nlohmann::json;

// Thrown from inside the event handler; yaml-cpp unwinds cleanly through it.
struct ConversionError {
  YAML::Mark mark;
  std::string message;
};

bool IsDigits(const std::string& s, size_t from, bool (*accept)(char)) {
  if (from >= s.size()) return false;
  for (size_t i = from; i < s.size(); ++i) {
    if (!accept(s[i])) return false;
  }
  return true;
}

bool IsDec(char c) { return c >= '0' && c <= '9'; }
bool IsOct(char c) { return c >= '0' && c <= '7'; }
bool IsHex(char c) {
  return IsDec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsCoreFloat(const std::string& s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0;
  while (i < s.size() && IsDec(s[i])) ++i, ++int_digits;
  size_t frac_digits = 0;
  bool dot = false;
  if (i < s.size() && s[i] == '.') {
    dot = true;
    ++i;
    while (i < s.size() && IsDec(s[i])) ++i, ++frac_digits;
  }
  if (int_digits == 0 && !(dot && frac_digits > 0)) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && IsDec(s[i])) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

json FloatOrString(const std::string& text, const std::string& parse_text) {
  errno = 0;
  double d = std::strtod(parse_text.c_str(), nullptr);
  if (!std::isfinite(d)) return json(text);
  return json(d);
}

json UnsignedRadix(const std::string& text, int base) {
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str() + 2, nullptr, base);
  if (errno == ERANGE) return json(text);
  if (v <= static_cast<unsigned long long>(INT64_MAX)) {
    return json(static_cast<int64_t>(v));
  }
  return json(static_cast<uint64_t>(v));
}

bool ValidUtf8(const std::string& s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int extra;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(extra) >= n) return false;
    for (int k = 1; k <= extra; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
        (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

// Builds JSON values from yaml-cpp's parse events with an explicit stack, so that deep
// input costs heap, not stack.
class JsonBuilder : public YAML::EventHandler {
 public:
  struct Frame {
    json value;
    bool is_map = false;
    std::optional<std::string> key;
    YAML::anchor_t anchor = 0;
    YAML::Mark key_mark;
    int64_t nodes = 1;
  };

  void OnDocumentStart(const YAML::Mark&) override {
    stack_.clear();
    root_.reset();
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    if (AwaitingKey()) {
      SetKey(mark, "null");
      return;
    }
    Complete(mark, json(nullptr), anchor, 1);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw ConversionError{mark, "unknown alias"};
    if (AwaitingKey()) {
      if (!it->second.first.is_string()) {
        throw ConversionError{mark, "mapping keys must be scalars"};
      }
      SetKey(mark, it->second.first.get<std::string>());
      return;
    }
    // Counted before the copy, so that an alias bomb stops before it allocates.
    Count(mark, it->second.second);
    Attach(it->second.first, 0, it->second.second);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    if (!ValidUtf8(value)) throw ConversionError{mark, "scalar is not valid UTF-8"};
    if (AwaitingKey()) {
      SetKey(mark, value);
      if (anchor != 0) anchors_[anchor] = {json(value), 1};
      return;
    }
    Complete(mark, Resolve(mark, tag, value), anchor, 1);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, json::array(), false, anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, json::object(), true, anchor);
  }
  void OnMapEnd() override { Close(); }

  std::optional<json> TakeRoot() { return std::move(root_); }

 private:
  bool AwaitingKey() const {
    return !stack_.empty() && stack_.back().is_map && !stack_.back().key.has_value();
  }

  void SetKey(const YAML::Mark& mark, const std::string& key) {
    Frame& top = stack_.back();
    if (top.value.contains(key)) {
      throw ConversionError{mark, absl::StrCat("duplicate mapping key \"", key, "\"")};
    }
    top.key = key;
    top.key_mark = mark;
  }

  void Count(const YAML::Mark& mark, int64_t nodes) {
    total_nodes_ += nodes;
    if (total_nodes_ > kMaxYamlNodes) {
      throw ConversionError{
          mark, absl::StrCat("document expands to more than ", kMaxYamlNodes, " values")};
    }
  }

  void Open(const YAML::Mark& mark, json value, bool is_map, YAML::anchor_t anchor) {
    if (AwaitingKey()) throw ConversionError{mark, "mapping keys must be scalars"};
    if (static_cast<int>(stack_.size()) >= kMaxYamlDepth) {
      throw ConversionError{
          mark, absl::StrCat("document is nested deeper than ", kMaxYamlDepth, " levels")};
    }
    Count(mark, 1);
    Frame frame;
    frame.value = std::move(value);
    frame.is_map = is_map;
    frame.anchor = anchor;
    frame.key_mark = mark;
    stack_.push_back(std::move(frame));
  }

  void Close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    Attach(std::move(frame.value), frame.anchor, frame.nodes);
  }

  void Complete(const YAML::Mark& mark, json value, YAML::anchor_t anchor, int64_t nodes) {
    Count(mark, nodes);
    Attach(std::move(value), anchor, nodes);
  }

  void Attach(json value, YAML::anchor_t anchor, int64_t nodes) {
    if (anchor != 0) anchors_[anchor] = {value, nodes};
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    top.nodes += nodes;
    if (top.is_map) {
      top.value[*top.key] = std::move(value);
      top.key.reset();
    } else {
      top.value.push_back(std::move(value));
    }
  }

  static json Resolve(const YAML::Mark& mark, const std::string& tag, const std::string& value) {
    if (tag == "?") return ResolvePlainScalar(value);
    if (tag == "!" || tag == "tag:yaml.org,2002:str") return json(value);
    if (tag == "tag:yaml.org,2002:int" || tag == "tag:yaml.org,2002:float" ||
        tag == "tag:yaml.org,2002:bool" || tag == "tag:yaml.org,2002:null") {
      json resolved = ResolvePlainScalar(value);
      bool ok = (tag == "tag:yaml.org,2002:int" && resolved.is_number_integer()) ||
                (tag == "tag:yaml.org,2002:float" && resolved.is_number()) ||
                (tag == "tag:yaml.org,2002:bool" && resolved.is_boolean()) ||
                (tag == "tag:yaml.org,2002:null" && resolved.is_null());
      if (!ok) {
        throw ConversionError{mark, absl::StrCat("\"", value, "\" is not a valid ", tag)};
      }
      if (tag == "tag:yaml.org,2002:float" && resolved.is_number_integer()) {
        return json(resolved.get<double>());
      }
      return resolved;
    }
    // Application tags (!foo): the text is kept as written.
    return json(value);
  }

  std::vector<Frame> stack_;
  std::optional<json> root_;
  std::map<YAML::anchor_t, std::pair<json, int64_t>> anchors_;
  int64_t total_nodes_ = 0;
};

std::string AtMark(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return absl::StrCat("line ", mark.line + 1, ", column ", mark.column + 1, ": ");
}

bool IsYaml11Special(const std::string& s) {
  static const char* const kWords[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No",
                                       "NO", "on", "On", "ON", "off", "Off", "OFF"};
  for (const char* word : kWords) {
    if (s == word) return true;
  }
  return false;
}

// Strings that a YAML reader (1.2 core, or 1.1 as Go's sigs.k8s.io/yaml reads) could take
// for something else, or that plain style cannot carry.
bool NeedsQuotes(const std::string& s) {
  if (s.empty()) return true;
  if (!ResolvePlainScalar(s).is_string()) return true;
  if (IsYaml11Special(s)) return true;
  size_t i = (s[0] == '-' || s[0] == '+' || s[0] == '.') ? 1 : 0;
  if (i < s.size() && IsDec(s[i])) return true;
  if (s == ".inf" || s == ".nan" || s == "=" || s == "<<") return true;
  unsigned char first = static_cast<unsigned char>(s.front());
  unsigned char last = static_cast<unsigned char>(s.back());
  if (first == ' ' || first == '\t' || last == ' ' || last == '\t') return true;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

void EmitString(YAML::Emitter& out, const std::string& s) {
  if (NeedsQuotes(s)) out << YAML::DoubleQuoted;
  out << s;
}

void Emit(YAML::Emitter& out, const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      out << YAML::Null;
      break;
    case json::value_t::boolean:
      out << (value.get<bool>() ? "true" : "false");
      break;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      // JSON text of a number is valid YAML of the same type ("1.0" stays a float).
      out << value.dump();
      break;
    case json::value_t::string:
      EmitString(out, value.get_ref<const std::string&>());
      break;
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const json& item : value) Emit(out, item);
      out << YAML::EndSeq;
      break;
    case json::value_t::object:
      out << YAML::BeginMap;
      for (auto it = value.begin(); it != value.end(); ++it) {
        out << YAML::Key;
        EmitString(out, it.key());
        out << YAML::Value;
        Emit(out, it.value());
      }
      out << YAML::EndMap;
      break;
    default:
      out << YAML::Null;
      break;
  }
}

}  // namespace

json ResolvePlainScalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return json(nullptr);
  if (s == "true" || s == "True" || s == "TRUE") return json(true);
  if (s == "false" || s == "False" || s == "FALSE") return json(false);
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && IsDigits(s, 2, IsOct)) {
    return UnsignedRadix(s, 8);
  }
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && IsDigits(s, 2, IsHex)) {
    return UnsignedRadix(s, 16);
  }
  size_t sign = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (IsDigits(s, sign, IsDec)) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (errno != ERANGE) return json(static_cast<int64_t>(v));
    if (s[0] != '-') {
      errno = 0;
      unsigned long long u = std::strtoull(s.c_str() + sign, nullptr, 10);
      if (errno != ERANGE) return json(static_cast<uint64_t>(u));
    }
    return FloatOrString(s, s);
  }
  if (IsCoreFloat(s)) return FloatOrString(s, s);
  return json(s);
}

absl::StatusOr<std::vector<json>> ParseYamlDocuments(const std::string& text) {
  std::vector<json> docs;
  std::istringstream in(text);
  JsonBuilder builder;
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      std::optional<json> root = builder.TakeRoot();
      if (root.has_value() && !root->is_null()) docs.push_back(std::move(*root));
    }
  } catch (const ConversionError& e) {
    return absl::InvalidArgumentError(absl::StrCat(AtMark(e.mark), e.message));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("YAML syntax error: ", AtMark(e.mark), e.msg));
  }
  return docs;
}

absl::StatusOr<json> ParseYaml(const std::string& text) {
  auto docs = ParseYamlDocuments(text);
  if (!docs.ok()) return docs.status();
  if (docs->size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected exactly one YAML document, found ", docs->size()));
  }
  return std::move(docs->front());
}

std::string ToYaml(const json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  Emit(out, value);
  std::string text = out.c_str();
  if (text.empty() || text.back() != '\n') text += '\n';
  return text;
}

std::string ToYamlDocuments(const std::vector<json>& values) {
  std::string text;
  for (const json& value : values) {
    text += "---\n";
    text += ToYaml(value);
  }
  return text;
}

}  // namespace coach::api::v1::codec
