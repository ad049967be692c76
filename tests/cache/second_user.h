// A second local user for the tests where ownership matters: a folder or
// entry of another user must disable a cache root (issue 19). Needs root
// (CI runs as root); elsewhere tests skip with the reason.
#ifndef JITGEMM_TESTS_CACHE_SECOND_USER_H_
#define JITGEMM_TESTS_CACHE_SECOND_USER_H_

#include <sys/types.h>

#include <functional>
#include <string>

namespace jitgemm::cache::testing {

class SecondUser {
 public:
  // Creates a system account with useradd (no home, no shell). Where that
  // fails (no useradd, /etc/passwd busy with a parallel test), a uid with
  // no account at all serves as well: the kernel checks numbers, not names.
  SecondUser();
  // Removes the account if one was made.
  ~SecondUser();
  SecondUser(const SecondUser&) = delete;
  SecondUser& operator=(const SecondUser&) = delete;

  // Empty if usable; otherwise why not (for GTEST_SKIP).
  const std::string& unavailable() const { return unavailable_; }
  uid_t uid() const { return uid_; }

  // chown `path` (not following a symlink) to this user.
  void Own(const std::string& path) const;
  // Runs `body` in a child process with this user's uid and gid; its
  // return value becomes the child's exit status, returned here.
  int RunAs(const std::function<int()>& body) const;

 private:
  std::string name_;
  bool created_ = false;
  uid_t uid_ = 0;
  std::string unavailable_;
};

}  // namespace jitgemm::cache::testing

#endif  // JITGEMM_TESTS_CACHE_SECOND_USER_H_
