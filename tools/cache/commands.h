// The commands of jitgemm-cache and what they share. Each command reads its
// flags (defined in main.cc), prints its report to stdout (problems to
// stderr) and returns the process exit status:
//   0 done / all sound, 1 problems found or the operation failed,
//   2 (verify-bundle only) intact but not usable by this build,
//   64 bad usage.
#ifndef JITGEMM_TOOLS_CACHE_COMMANDS_H_
#define JITGEMM_TOOLS_CACHE_COMMANDS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/strings/string_view.h"
#include "cache/disk_cache.h"

ABSL_DECLARE_FLAG(bool, remove_corrupt);
ABSL_DECLARE_FLAG(std::string, max_bytes);
ABSL_DECLARE_FLAG(bool, yes);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, from);
ABSL_DECLARE_FLAG(std::vector<std::string>, manifest);
ABSL_DECLARE_FLAG(std::string, arch);
ABSL_DECLARE_FLAG(std::string, tuning);
ABSL_DECLARE_FLAG(int, sms);
ABSL_DECLARE_FLAG(bool, tuning_records);
ABSL_DECLARE_FLAG(bool, list);
ABSL_DECLARE_FLAG(std::string, sign_key);

namespace jitgemm::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitProblems = 1;
inline constexpr int kExitIncompatible = 2;
inline constexpr int kExitUsage = 64;

int StatsCommand();
int VerifyCommand();
int PruneCommand();
int ClearCommand();
int ExportCommand();
int ImportCommand();
int VerifyBundleCommand();
int KeygenCommand();
// remote stats | push | pull (tools/cache/remote.cc).
int RemoteCommand(const std::string& sub);

// "123456", "512M", "4G", "1.5G" is not accepted; K, M, G, T are powers of
// 1024, with an optional "B" or "iB".
std::optional<uint64_t> ParseByteCount(absl::string_view text);
// "1234567 bytes (1.2 MiB)".
std::string Bytes(uint64_t bytes);
// The cache a jitgemm process would use, opened read-only: commands that only
// look create nothing, not even the root's folders.
std::shared_ptr<cache::DiskCache> OpenForLooking();
// `text` with control characters and bytes outside printable ASCII escaped
// C-style: paths and names come from disks and bundles other people made.
std::string Esc(absl::string_view text);
// Prints "jitgemm-cache: <message>" to stderr.
void Complain(absl::string_view message);

}  // namespace jitgemm::tools

#endif  // JITGEMM_TOOLS_CACHE_COMMANDS_H_
