// Warnings of the cache layer, written to stderr.
//
// The cache never fails a caller, so stderr is the only place a user learns
// that their cache is disabled or failing. Each message is one write(2) of one
// line, so lines from many processes sharing a terminal or log do not
// interleave mid-line.
//
// Thread safety: may be called from any thread.
#ifndef JITGEMM_CACHE_LOG_H_
#define JITGEMM_CACHE_LOG_H_

#include <string>

#include "absl/strings/string_view.h"

namespace jitgemm::cache {

// Writes "jitgemm cache: <message>\n" to stderr.
void LogCacheWarning(absl::string_view message);

// `text` in single quotes with control characters, quotes, backslashes and
// bytes outside printable ASCII escaped C-style, so a path or name read from
// disk or a manifest cannot end a line or send a terminal escape.
std::string QuotedForHumans(absl::string_view text);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_LOG_H_
