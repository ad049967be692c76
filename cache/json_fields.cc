#include "cache/json_fields.h"

#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace jitgemm::cache {
namespace {

// The streaming pass of ParseBoundedJson: depth and duplicate keys. It keeps
// one set of keys per open object, so it holds no more than the text.
class LimitChecker : public nlohmann::json_sax<Json> {
 public:
  explicit LimitChecker(int max_depth) : max_depth_(max_depth) {}

  const std::string& error() const { return error_; }

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return Open(true); }
  bool start_array(std::size_t) override { return Open(false); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }
  bool key(string_t& key) override {
    Level& level = levels_.back();
    if (!level.keys.insert(key).second) {
      error_ = absl::StrCat("duplicate key \"", key, "\" in ", Where());
      return false;
    }
    level.name = key;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception&) override {
    error_ = absl::StrCat("not valid JSON (at byte ", position, ")");
    return false;
  }

 private:
  struct Level {
    bool object;
    std::string name;  // the key being read, for objects
    std::set<std::string> keys;
  };

  bool Open(bool object) {
    if (static_cast<int>(levels_.size()) >= max_depth_) {
      error_ = absl::StrCat("nested deeper than ", max_depth_, " levels at ", Where());
      return false;
    }
    levels_.push_back(Level{object, "", {}});
    return true;
  }
  bool Close() {
    levels_.pop_back();
    return true;
  }
  std::string Where() const {
    std::string out = "$";
    for (const Level& l : levels_) absl::StrAppend(&out, l.object ? "." + l.name : "[]");
    return out;
  }

  const int max_depth_;
  std::vector<Level> levels_;
  std::string error_;
};

absl::Status Bad(absl::string_view where, absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": field '", field, "' ", why));
}

absl::Status Missing(absl::string_view where, absl::string_view field) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": missing field '", field, "'"));
}

}  // namespace

absl::StatusOr<Json> ParseBoundedJson(std::string_view text, const JsonLimits& limits,
                                      absl::string_view what) {
  if (text.size() > limits.max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", text.size(), " bytes, more than the limit of ", limits.max_bytes));
  }
  LimitChecker checker(limits.max_depth);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &checker,
                                  nlohmann::detail::input_format_t::json, /*strict=*/true);
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", checker.error().empty() ? "not valid JSON" : checker.error()));
  }
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(what, ": not valid JSON"));
  return j;
}

absl::Status CheckKnownFields(const Json& object, std::initializer_list<absl::string_view> known,
                              absl::string_view where) {
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (absl::string_view k : known) found = found || k == key;
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unknown field '", key, "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status GetJsonString(const Json& object, absl::string_view field, bool required,
                           absl::string_view where, std::string* out) {
  auto it = object.find(std::string(field));
  if (it == object.end()) return required ? Missing(where, field) : absl::OkStatus();
  if (!it->is_string()) return Bad(where, field, "is not a string");
  *out = it->get_ref<const std::string&>();
  return absl::OkStatus();
}

absl::Status GetJsonCount(const Json& object, absl::string_view field, bool required,
                          absl::string_view where, uint64_t* out) {
  auto it = object.find(std::string(field));
  if (it == object.end()) return required ? Missing(where, field) : absl::OkStatus();
  if (!it->is_number_unsigned()) return Bad(where, field, "is not a count");
  *out = it->get<uint64_t>();
  return absl::OkStatus();
}

absl::Status GetJsonInt(const Json& object, absl::string_view field, bool required,
                        absl::string_view where, int* out) {
  auto it = object.find(std::string(field));
  if (it == object.end()) return required ? Missing(where, field) : absl::OkStatus();
  if (!it->is_number_integer()) return Bad(where, field, "is not an integer");
  const bool in_range = it->is_number_unsigned()
                            ? it->get<uint64_t>() <= uint64_t{std::numeric_limits<int>::max()}
                            : it->get<int64_t>() >= std::numeric_limits<int>::min() &&
                                  it->get<int64_t>() <= std::numeric_limits<int>::max();
  if (!in_range) return Bad(where, field, "is out of range");
  *out = static_cast<int>(it->get<int64_t>());
  return absl::OkStatus();
}

absl::Status GetJsonStringList(const Json& value, absl::string_view where,
                               std::vector<std::string>* out) {
  if (!value.is_array()) return absl::InvalidArgumentError(absl::StrCat(where, " is not an array"));
  for (const Json& s : value) {
    if (!s.is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " holds a non-string"));
    }
    out->push_back(s.get<std::string>());
  }
  return absl::OkStatus();
}

}  // namespace jitgemm::cache
