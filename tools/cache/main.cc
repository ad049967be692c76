// jitgemm-cache: inspect and maintain the kernel cache, and move its entries
// between machines as bundles. See docs/cache.md and docs/deploying.md.
//
//   jitgemm-cache stats
//   jitgemm-cache verify [--remove-corrupt]
//   jitgemm-cache prune [--max-bytes=N]
//   jitgemm-cache clear [--yes]
//   jitgemm-cache export --out=DIR|FILE.tar [--from=BUNDLE]
//                        [--manifest=a.json,b.json [--arch=sm_90a] [--tuning=..] [--sms=N]]
//   jitgemm-cache import --from=DIR|FILE.tar
//   jitgemm-cache verify-bundle --from=DIR|FILE.tar [--arch=sm_90a] [--list]
//   jitgemm-cache keygen --out=PREFIX      (PREFIX.key private, PREFIX.pub public)
//   jitgemm-cache remote stats | push [--from=DIR] | pull --manifest=.. [--arch=..]
//
// The cache is the one a jitgemm process would use: JITGEMM_CACHE_DIR (else
// $XDG_CACHE_HOME/jitgemm, else ~/.cache/jitgemm), JITGEMM_CACHE_READONLY_DIRS,
// JITGEMM_CACHE, JITGEMM_CACHE_MAX_BYTES, JITGEMM_CACHE_TRUSTED_KEYS.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "tools/cache/commands.h"

ABSL_FLAG(bool, remove_corrupt, false, "verify: delete corrupt entries of the writable root.");
ABSL_FLAG(std::string, max_bytes, "",
          "prune: the size to prune to (bytes, or with a K/M/G/T suffix); default: the cache's "
          "cap (JITGEMM_CACHE_MAX_BYTES, 2G).");
ABSL_FLAG(bool, yes, false, "clear: do not ask (needed when stdin is not a terminal).");
ABSL_FLAG(std::string, out, "",
          "export: the bundle to write: a directory (must not exist or be empty) or FILE.tar.");
ABSL_FLAG(std::string, from, "",
          "import, verify-bundle: the bundle to read (directory or FILE.tar). export: copy from "
          "this bundle instead of the cache.");
ABSL_FLAG(std::vector<std::string>, manifest, {},
          "export: only the kernels these manifests need (comma-separated), as jitgemm-warmup "
          "computes them for --arch, --tuning and --sms.");
ABSL_FLAG(std::string, arch, "",
          "export --manifest: target architecture (sm_90a); empty: the current GPU's. "
          "verify-bundle: check that the bundle holds kernels for it.");
ABSL_FLAG(std::string, tuning, "",
          "export --manifest: override the manifests' tuning policy, as jitgemm-warmup --tuning.");
ABSL_FLAG(int, sms, 0, "export --manifest: SM count of the target part, as jitgemm-warmup --sms.");
ABSL_FLAG(bool, tuning_records, true,
          "export --manifest: also copy the stored tuning decisions of the manifests' problems.");
ABSL_FLAG(bool, list, false, "verify, verify-bundle: list every entry checked.");
ABSL_FLAG(std::string, sign_key, "",
          "export: sign the bundle's manifest with this Ed25519 private key (PEM file), for "
          "processes that set JITGEMM_CACHE_TRUSTED_KEYS.");

namespace {

constexpr char kUsage[] =
    "Inspects and maintains the jitgemm kernel cache; moves its entries as bundles.\n"
    "usage: jitgemm-cache <command> [flags]\n"
    "  stats                       roots, mode, entries and bytes per kind, counters\n"
    "  verify [--remove-corrupt]   parse every entry; report (and delete) corrupt ones\n"
    "  prune [--max-bytes=N]       evict least recently used entries down to N bytes\n"
    "  clear [--yes]               remove every entry of the writable root\n"
    "  export --out=DIR|FILE.tar   write a bundle of the cache (--sign-key=FILE signs it; with\n"
    "         [--manifest=.. --arch=sm_90a]  --manifest=m.json --arch=.., only their kernels)\n"
    "  import --from=DIR|FILE.tar  check a bundle and publish its entries into the cache\n"
    "  verify-bundle --from=...    check every entry of a bundle against its manifest\n"
    "  keygen --out=PREFIX         an Ed25519 key pair for export --sign-key=PREFIX.key\n"
    "  remote stats                the remote tier (JITGEMM_REMOTE_CACHE): server, keys\n"
    "  remote push [--from=DIR]    publish the local cache (or a bundle directory) to it\n"
    "  remote pull --manifest=..   fetch the kernels the manifests need into the local cache\n"
    "Exit status: 0 ok, 1 problems found or failure, 2 bundle intact but not for this\n"
    "build (verify-bundle), 64 usage. See docs/deploying.md.";

// Abseil spells flags with underscores; accept "--max-bytes" for
// "--max_bytes" as well (only the name, before any '=').
std::vector<std::string> Underscored(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (size_t i = 1; i < out.size(); ++i) {
    std::string& a = out[i];
    if (a == "--") break;
    if (a.size() < 3 || a[0] != '-') continue;
    const size_t start = a[1] == '-' ? 2 : 1;
    const size_t end = std::min(a.find('='), a.size());
    for (size_t j = start; j < end; ++j) {
      if (a[j] == '-') a[j] = '_';
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(kUsage);
  std::vector<std::string> spelled = Underscored(argc, argv);
  std::vector<char*> argv2;
  for (std::string& a : spelled) argv2.push_back(a.data());
  std::vector<char*> args = absl::ParseCommandLine(static_cast<int>(argv2.size()), argv2.data());
  using namespace jitgemm::tools;
  if (args.size() == 3 && std::string(args[1]) == "remote") return RemoteCommand(args[2]);
  if (args.size() != 2) {
    std::fprintf(stderr, "%s\n", kUsage);
    return kExitUsage;
  }
  const std::string command = args[1];
  if (command == "stats") return StatsCommand();
  if (command == "verify") return VerifyCommand();
  if (command == "prune") return PruneCommand();
  if (command == "clear") return ClearCommand();
  if (command == "export") return ExportCommand();
  if (command == "import") return ImportCommand();
  if (command == "verify-bundle") return VerifyBundleCommand();
  if (command == "keygen") return KeygenCommand();
  Complain(absl::StrCat("unknown command '", command, "'"));
  std::fprintf(stderr, "%s\n", kUsage);
  return kExitUsage;
}
