#include "tests/cache/second_user.h"

#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace jitgemm::cache::testing {
namespace {

int Run(const std::string& command) { return std::system(command.c_str()); }

}  // namespace

SecondUser::SecondUser() {
  if (::geteuid() != 0) {
    unavailable_ = "needs root to give files to a second user (CI runs as root)";
    return;
  }
  name_ = absl::StrCat("jgtest", ::getpid());
  if (Run(absl::StrCat("useradd --system --no-create-home --shell /usr/sbin/nologin ", name_,
                       " >/dev/null 2>&1")) == 0) {
    if (const struct passwd* pw = ::getpwnam(name_.c_str()); pw != nullptr) {
      created_ = true;
      uid_ = pw->pw_uid;
      return;
    }
  }
  // No account: the first free uid from 61000 up.
  for (uid_t uid = 61000; uid < 62000; ++uid) {
    if (::getpwuid(uid) == nullptr) {
      uid_ = uid;
      return;
    }
  }
  unavailable_ = "found no free uid for a second user";
}

SecondUser::~SecondUser() {
  if (created_) Run(absl::StrCat("userdel ", name_, " >/dev/null 2>&1"));
}

void SecondUser::Own(const std::string& path) const {
  ASSERT_EQ(::lchown(path.c_str(), uid_, uid_), 0) << path;
}

int SecondUser::RunAs(const std::function<int()>& body) const {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::setgid(uid_) != 0 || ::setuid(uid_) != 0) ::_exit(125);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

}  // namespace jitgemm::cache::testing
