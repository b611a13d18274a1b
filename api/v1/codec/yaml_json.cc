#include "api/v1/codec/yaml_json.h"

#include <yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include "absl/strings/str_cat.h"

namespace coach::api::v1::codec {
namespace {

using nlohmann::json;

// Where a problem is, 0-based as libyaml counts; line < 0 when unknown.
struct Mark {
  int64_t line = -1;
  int64_t column = -1;
};

Mark FromYaml(const yaml_mark_t& mark) {
  return Mark{static_cast<int64_t>(mark.line), static_cast<int64_t>(mark.column)};
}

// Thrown from the event handlers and caught in ParseYamlDocuments.
struct ConversionError {
  Mark mark;
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
bool IsHex(char c) { return IsDec(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

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

// Builds JSON values from libyaml's parse events with an explicit stack, so that deep
// input costs heap, not stack. (libyaml rather than yaml-cpp: yaml-cpp 0.7 loops forever,
// allocating, on input as small as ",'\n-", which the codec fuzzer found.)
class JsonBuilder {
 public:
  explicit JsonBuilder(int outer_depth) : outer_depth_(outer_depth) {}

  struct Frame {
    json value;
    bool is_map = false;
    std::optional<std::string> key;
    std::string anchor;
    Mark key_mark;
    int64_t nodes = 1;
    int64_t bytes = 0;
  };

  // What a value costs when it is copied (an alias): its values and its bytes.
  struct Size {
    int64_t nodes = 1;
    int64_t bytes = 0;
  };

  void OnDocumentStart() {
    stack_.clear();
    root_.reset();
    // Anchors are scoped to their document.
    anchors_.clear();
  }

  void OnAlias(const Mark& mark, const std::string& anchor) {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) throw ConversionError{mark, "unknown alias"};
    if (AwaitingKey()) {
      if (!it->second.first.is_string()) {
        throw ConversionError{mark, "mapping keys must be scalars"};
      }
      const std::string& key = it->second.first.get_ref<const std::string&>();
      Count(mark, {0, static_cast<int64_t>(key.size())});
      SetKey(mark, key);
      return;
    }
    // Counted before the copy, so that an alias bomb stops before it allocates.
    Count(mark, it->second.second);
    Attach(it->second.first, "", it->second.second);
  }

  // `tag` is "?" for a plain scalar without a tag, "!" for a quoted one without a tag.
  void OnScalar(const Mark& mark, const std::string& tag, const std::string& anchor,
                const std::string& value) {
    if (!ValidUtf8(value)) throw ConversionError{mark, "scalar is not valid UTF-8"};
    if (AwaitingKey()) {
      json key = Resolve(mark, tag, value);
      // Keys are strings in JSON; a plain `null`/`~` key reads as the text "null".
      std::string text = key.is_string() ? key.get<std::string>()
                         : key.is_null() ? std::string("null")
                                         : value;
      Count(mark, {0, static_cast<int64_t>(text.size())});
      SetKey(mark, text);
      if (!anchor.empty()) anchors_[anchor] = {json(text), {1, static_cast<int64_t>(text.size())}};
      return;
    }
    Complete(mark, Resolve(mark, tag, value), anchor, {1, static_cast<int64_t>(value.size())});
  }

  void OnSequenceStart(const Mark& mark, const std::string& anchor) {
    Open(mark, json::array(), false, anchor);
  }
  void OnSequenceEnd() { Close(); }

  void OnMapStart(const Mark& mark, const std::string& anchor) {
    Open(mark, json::object(), true, anchor);
  }
  void OnMapEnd() { Close(); }

  std::optional<json> TakeRoot() { return std::move(root_); }

 private:
  bool AwaitingKey() const {
    return !stack_.empty() && stack_.back().is_map && !stack_.back().key.has_value();
  }

  void SetKey(const Mark& mark, const std::string& key) {
    Frame& top = stack_.back();
    top.bytes += static_cast<int64_t>(key.size());
    if (top.value.contains(key)) {
      throw ConversionError{mark, absl::StrCat("duplicate mapping key \"", key, "\"")};
    }
    top.key = key;
    top.key_mark = mark;
  }

  void Count(const Mark& mark, Size size) {
    total_nodes_ += size.nodes;
    total_bytes_ += size.bytes;
    if (total_nodes_ > kMaxYamlNodes) {
      throw ConversionError{
          mark, absl::StrCat("document expands to more than ", kMaxYamlNodes, " values")};
    }
    if (total_bytes_ > kMaxYamlBytes) {
      throw ConversionError{mark, absl::StrCat("document expands to more than ", kMaxYamlBytes,
                                               " bytes of keys and scalars")};
    }
  }

  void Open(const Mark& mark, json value, bool is_map, const std::string& anchor) {
    if (AwaitingKey()) throw ConversionError{mark, "mapping keys must be scalars"};
    if (static_cast<int>(stack_.size()) + outer_depth_ >= kMaxYamlDepth) {
      throw ConversionError{
          mark, absl::StrCat("document is nested deeper than ", kMaxYamlDepth, " levels")};
    }
    Count(mark, {1, 0});
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
    Attach(std::move(frame.value), frame.anchor, {frame.nodes, frame.bytes});
  }

  void Complete(const Mark& mark, json value, const std::string& anchor, Size size) {
    Count(mark, size);
    Attach(std::move(value), anchor, size);
  }

  void Attach(json value, const std::string& anchor, Size size) {
    if (!anchor.empty()) anchors_[anchor] = {value, size};
    if (stack_.empty()) {
      root_ = std::move(value);
      return;
    }
    Frame& top = stack_.back();
    top.nodes += size.nodes;
    top.bytes += size.bytes;
    if (top.is_map) {
      top.value[*top.key] = std::move(value);
      top.key.reset();
    } else {
      top.value.push_back(std::move(value));
    }
  }

  static json Resolve(const Mark& mark, const std::string& tag, const std::string& value) {
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

  const int outer_depth_;
  std::vector<Frame> stack_;
  std::optional<json> root_;
  std::map<std::string, std::pair<json, Size>> anchors_;
  int64_t total_nodes_ = 0;
  int64_t total_bytes_ = 0;
};

std::string AtMark(const Mark& mark) {
  if (mark.line < 0) return "";
  return absl::StrCat("line ", mark.line + 1, ", column ", mark.column + 1, ": ");
}

bool IsYaml11Special(const std::string& s) {
  static const char* const kWords[] = {"y",  "Y",  "yes", "Yes", "YES", "n",   "N",   "no",
                                       "No", "NO", "on",  "On",  "ON",  "off", "Off", "OFF"};
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

// Writes block-style YAML through libyaml's emitter, one event at a time.
class YamlWriter {
 public:
  YamlWriter() {
    yaml_emitter_initialize(&emitter_);
    yaml_emitter_set_output(&emitter_, &YamlWriter::Append, &text_);
    yaml_emitter_set_unicode(&emitter_, 1);
    yaml_emitter_set_indent(&emitter_, 2);
    // No folding of long scalars: a folded plain scalar reads back the same, but a
    // reader of the output (a person, a diff) is better served by one line per value.
    yaml_emitter_set_width(&emitter_, -1);
  }
  ~YamlWriter() { yaml_emitter_delete(&emitter_); }
  YamlWriter(const YamlWriter&) = delete;
  YamlWriter& operator=(const YamlWriter&) = delete;

  std::string Document(const json& value) {
    yaml_event_t event;
    yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING);
    Send(&event);
    yaml_document_start_event_initialize(&event, nullptr, nullptr, nullptr, 1);
    Send(&event);
    Value(value);
    yaml_document_end_event_initialize(&event, 1);
    Send(&event);
    yaml_stream_end_event_initialize(&event);
    Send(&event);
    yaml_emitter_flush(&emitter_);
    return text_;
  }

 private:
  static int Append(void* data, unsigned char* buffer, size_t size) {
    static_cast<std::string*>(data)->append(reinterpret_cast<const char*>(buffer), size);
    return 1;
  }

  // libyaml takes ownership of the event and frees it, successful or not. Emitting from
  // a JSON value cannot produce an invalid event sequence, so a failure here is a bug.
  void Send(yaml_event_t* event) {
    if (!yaml_emitter_emit(&emitter_, event)) {
      throw std::logic_error(
          absl::StrCat("libyaml emitter: ", emitter_.problem ? emitter_.problem : "failed"));
    }
  }

  void Scalar(const std::string& text, yaml_scalar_style_t style) {
    yaml_event_t event;
    yaml_scalar_event_initialize(&event, nullptr, nullptr,
                                 reinterpret_cast<yaml_char_t*>(const_cast<char*>(text.data())),
                                 static_cast<int>(text.size()), 1, 1, style);
    Send(&event);
  }

  void String(const std::string& s) {
    // Plain where it reads back as the same string; libyaml itself falls back to quotes
    // where plain style cannot carry the text (": ", a leading "-", ...).
    Scalar(s, NeedsQuotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_PLAIN_SCALAR_STYLE);
  }

  void Value(const json& value) {
    yaml_event_t event;
    switch (value.type()) {
      case json::value_t::boolean:
        Scalar(value.get<bool>() ? "true" : "false", YAML_PLAIN_SCALAR_STYLE);
        return;
      case json::value_t::number_integer:
      case json::value_t::number_unsigned:
      case json::value_t::number_float:
        // JSON text of a number is valid YAML of the same type ("1.0" stays a float).
        Scalar(value.dump(), YAML_PLAIN_SCALAR_STYLE);
        return;
      case json::value_t::string:
        String(value.get_ref<const std::string&>());
        return;
      case json::value_t::array:
        yaml_sequence_start_event_initialize(&event, nullptr, nullptr, 1,
                                             YAML_BLOCK_SEQUENCE_STYLE);
        Send(&event);
        for (const json& item : value) Value(item);
        yaml_sequence_end_event_initialize(&event);
        Send(&event);
        return;
      case json::value_t::object:
        yaml_mapping_start_event_initialize(&event, nullptr, nullptr, 1, YAML_BLOCK_MAPPING_STYLE);
        Send(&event);
        for (auto it = value.begin(); it != value.end(); ++it) {
          String(it.key());
          Value(it.value());
        }
        yaml_mapping_end_event_initialize(&event);
        Send(&event);
        return;
      default:
        Scalar("null", YAML_PLAIN_SCALAR_STYLE);
        return;
    }
  }

  yaml_emitter_t emitter_;
  std::string text_;
};

// Owns a libyaml parser reading `text` (which must outlive it).
class YamlReader {
 public:
  explicit YamlReader(const std::string& text) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~YamlReader() { yaml_parser_delete(&parser_); }
  YamlReader(const YamlReader&) = delete;
  YamlReader& operator=(const YamlReader&) = delete;

  // Feeds every event to `builder`, collecting the non-empty documents.
  void Read(JsonBuilder& builder, std::vector<json>& docs) {
    while (true) {
      yaml_event_t event;
      if (!yaml_parser_parse(&parser_, &event)) {
        std::string message = parser_.problem ? parser_.problem : "malformed input";
        if (parser_.context) message = absl::StrCat(parser_.context, ": ", message);
        throw SyntaxError{FromYaml(parser_.problem_mark), message};
      }
      // Freed on every path out of this iteration, exceptions from the builder included.
      std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> owned(&event, yaml_event_delete);
      const Mark mark = FromYaml(event.start_mark);
      switch (event.type) {
        case YAML_STREAM_END_EVENT:
          return;
        case YAML_DOCUMENT_START_EVENT:
          builder.OnDocumentStart();
          break;
        case YAML_DOCUMENT_END_EVENT: {
          std::optional<json> root = builder.TakeRoot();
          if (root.has_value() && !root->is_null()) docs.push_back(std::move(*root));
          break;
        }
        case YAML_ALIAS_EVENT:
          builder.OnAlias(mark, Text(event.data.alias.anchor));
          break;
        case YAML_SCALAR_EVENT: {
          const auto& scalar = event.data.scalar;
          std::string tag = scalar.tag != nullptr                     ? Text(scalar.tag)
                            : scalar.style == YAML_PLAIN_SCALAR_STYLE ? "?"
                                                                      : "!";
          builder.OnScalar(mark, tag, Text(scalar.anchor),
                           std::string(reinterpret_cast<const char*>(scalar.value), scalar.length));
          break;
        }
        case YAML_SEQUENCE_START_EVENT:
          builder.OnSequenceStart(mark, Text(event.data.sequence_start.anchor));
          break;
        case YAML_SEQUENCE_END_EVENT:
          builder.OnSequenceEnd();
          break;
        case YAML_MAPPING_START_EVENT:
          builder.OnMapStart(mark, Text(event.data.mapping_start.anchor));
          break;
        case YAML_MAPPING_END_EVENT:
          builder.OnMapEnd();
          break;
        default:
          break;
      }
    }
  }

  struct SyntaxError {
    Mark mark;
    std::string message;
  };

 private:
  static std::string Text(const yaml_char_t* text) {
    return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text));
  }

  yaml_parser_t parser_;
};

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

absl::StatusOr<std::vector<json>> ParseYamlDocuments(const std::string& text, int outer_depth) {
  std::vector<json> docs;
  JsonBuilder builder(outer_depth);
  try {
    YamlReader reader(text);
    reader.Read(builder, docs);
  } catch (const ConversionError& e) {
    return absl::InvalidArgumentError(absl::StrCat(AtMark(e.mark), e.message));
  } catch (const YamlReader::SyntaxError& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("YAML syntax error: ", AtMark(e.mark), e.message));
  }
  return docs;
}

absl::StatusOr<json> ParseYaml(const std::string& text, int outer_depth) {
  auto docs = ParseYamlDocuments(text, outer_depth);
  if (!docs.ok()) return docs.status();
  if (docs->size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected exactly one YAML document, found ", docs->size()));
  }
  return std::move(docs->front());
}

std::string ToYaml(const json& value) {
  YamlWriter writer;
  std::string text = writer.Document(value);
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
