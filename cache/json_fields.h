// Bounded JSON: how jitgemm reads JSON that it did not just write itself (a
// bundle's manifest, a tuning record read back from the cache, a warm-up
// manifest), and the typed field readers those parsers share.
//
// Every such text is checked before a DOM is built: its size against a
// limit, its nesting depth against a limit, and every object for a key that
// appears twice (nlohmann keeps the last one silently, so a second "files"
// could hide the first). The check is a streaming pass that allocates no more
// than the deepest path, so a megabyte of '[' costs a megabyte of reading,
// not gigabytes of nodes. Readers then refuse fields they do not know
// (CheckKnownFields): a misspelt option is an error naming it, not a default.
//
// Thread safety: pure functions.
#ifndef JITGEMM_CACHE_JSON_FIELDS_H_
#define JITGEMM_CACHE_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace jitgemm::cache {

using Json = nlohmann::json;

struct JsonLimits {
  uint64_t max_bytes = 0;
  int max_depth = 0;  // objects and arrays nested; the top-level value is depth 1
};

// The parsed text, or InvalidArgument saying "<what>: ..." and why: larger
// than the limit, nested deeper than the limit, not JSON, or a key repeated
// in one object (naming the key and where).
absl::StatusOr<Json> ParseBoundedJson(std::string_view text, const JsonLimits& limits,
                                      absl::string_view what);

// InvalidArgument "<where>: unknown field 'x'" for the first key of
// `object` that is not in `known`. REQUIRES: object.is_object().
absl::Status CheckKnownFields(const Json& object, std::initializer_list<absl::string_view> known,
                              absl::string_view where);

// Typed readers. Each checks the type (and range) before converting, since
// nlohmann's get<> throws on a mismatch. A missing field is an error only if
// `required`; otherwise `*out` keeps its value. Errors are InvalidArgument
// "<where>: missing field 'x'" or "<where>: field 'x' <why>".
absl::Status GetJsonString(const Json& object, absl::string_view field, bool required,
                           absl::string_view where, std::string* out);
absl::Status GetJsonCount(const Json& object, absl::string_view field, bool required,
                          absl::string_view where, uint64_t* out);
absl::Status GetJsonInt(const Json& object, absl::string_view field, bool required,
                        absl::string_view where, int* out);
absl::Status GetJsonStringList(const Json& value, absl::string_view where,
                               std::vector<std::string>* out);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_JSON_FIELDS_H_
