// CacheSettings: where the disk cache lives and how it may be used, usually
// read from the environment once per process.
//
//   JITGEMM_CACHE               off | readonly | readwrite (default readwrite)
//   JITGEMM_CACHE_DIR           the writable root, an absolute path (a relative
//                               one is refused with a warning); else
//                               $XDG_CACHE_HOME/jitgemm, else ~/.cache/jitgemm
//   JITGEMM_CACHE_READONLY_DIRS ':'-separated read-only roots (warmed bundles),
//                               searched before the writable root
//   JITGEMM_CACHE_TRUSTED_KEYS  ':'-separated PEM files of Ed25519 public keys;
//                               when set, a read-only root is used and a bundle
//                               imported only if one of them signed its
//                               manifest (cache/bundle_signature.h)
//   JITGEMM_CACHE_MAX_BYTES     size cap of the writable root; a number with an
//                               optional K, M, G or T suffix (powers of 1024);
//                               default 2 GiB
//   JITGEMM_CACHE_LOCK_TIMEOUT_S  how long a process waits for another's
//                               compile of the same key before compiling
//                               itself (default 120)
//   JITGEMM_REMOTE_CACHE...     the remote tier: cache/remote_settings.h
//
// A value that does not parse keeps the default and is reported in
// `problems`, which DiskCache prints once.
//
// Thread safety: a value type. FromEnvironment reads the process environment,
// which must not be modified concurrently (getenv's own rule).
#ifndef JITGEMM_CACHE_SETTINGS_H_
#define JITGEMM_CACHE_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cache/remote_settings.h"

namespace jitgemm::cache {

enum class CacheMode { kOff, kReadOnly, kReadWrite };

// "off", "readonly", "readwrite".
const char* CacheModeName(CacheMode mode);

inline constexpr uint64_t kDefaultMaxBytes = uint64_t{2} << 30;

struct CacheSettings {
  // The writable root. Empty: resolved by DiskCache::Open through
  // DefaultCacheRoot() ($JITGEMM_CACHE_DIR, $XDG_CACHE_HOME/jitgemm,
  // ~/.cache/jitgemm).
  std::string root;
  // Searched first, never written; also $JITGEMM_CACHE_READONLY_DIRS.
  std::vector<std::string> readonly_roots;
  // Public key files; when not empty, read-only roots and imports must be
  // signed by one of them. Also $JITGEMM_CACHE_TRUSTED_KEYS.
  std::vector<std::string> trusted_keys;
  CacheMode mode = CacheMode::kReadWrite;
  // Size cap of the writable root's entries, in bytes of file size.
  uint64_t max_bytes = kDefaultMaxBytes;
  // How long GetOrCreate waits on another holder of a key's lock.
  absl::Duration lock_timeout = absl::Seconds(120);
  // The shared remote tier (cache/remote_settings.h); off unless
  // $JITGEMM_REMOTE_CACHE is set.
  RemoteSettings remote;
  // Settings that did not parse, one line each; not configuration.
  std::vector<std::string> problems;

  static CacheSettings FromEnvironment();
};

CacheSettings SettingsFromVariables(const GetEnvFunction& getenv);

// The default writable root for these variables: $JITGEMM_CACHE_DIR (only if
// absolute), else
// $XDG_CACHE_HOME/jitgemm (only if absolute, as the XDG spec asks), else
// $HOME/.cache/jitgemm, else the password database's home. Empty if none.
std::string DefaultCacheRoot(const GetEnvFunction& getenv);

// The process environment as a GetEnvFunction.
std::optional<std::string> GetProcessEnv(absl::string_view name);

}  // namespace jitgemm::cache

#endif  // JITGEMM_CACHE_SETTINGS_H_
