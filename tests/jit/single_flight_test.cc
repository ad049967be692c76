#include "jit/single_flight.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/status_matchers.h"

namespace jitgemm::jit {
namespace {

using ::jitgemm::support::StatusIs;
using ::testing::HasSubstr;

// RELIABILITY item 9: 64 threads on one key share one creation and one value.
TEST(SingleFlightTest, SixtyFourThreadsOneKeyCreateOnce) {
  SingleFlight<int> table;
  std::atomic<int> runs{0};
  absl::Notification go;
  std::vector<std::shared_ptr<const int>> got(64);
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&, i] {
      go.WaitForNotification();
      auto v = table.Get("key", [&]() -> absl::StatusOr<std::shared_ptr<const int>> {
        ++runs;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return std::make_shared<const int>(42);
      });
      ASSERT_TRUE(v.ok());
      got[i] = *v;
    });
  }
  go.Notify();
  for (auto& t : threads) t.join();
  EXPECT_EQ(runs.load(), 1);
  for (const auto& v : got) EXPECT_EQ(v.get(), got[0].get());
}

TEST(SingleFlightTest, DistinctKeysDoNotBlockEachOther) {
  SingleFlight<int> table;
  std::atomic<int> runs{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 32; ++i) {
    threads.emplace_back([&, i] {
      auto v =
          table.Get(std::to_string(i % 8), [&]() -> absl::StatusOr<std::shared_ptr<const int>> {
            ++runs;
            // A creation that itself asks the table for another key must not deadlock.
            auto inner = table.Get("inner" + std::to_string(i % 8), [] {
              return absl::StatusOr<std::shared_ptr<const int>>(std::make_shared<const int>(1));
            });
            EXPECT_TRUE(inner.ok());
            return std::make_shared<const int>(i % 8);
          });
      ASSERT_TRUE(v.ok());
      EXPECT_EQ(**v, i % 8);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(runs.load(), 8);
}

TEST(SingleFlightTest, ErrorReachesEveryWaiterAndRetrySucceeds) {
  SingleFlight<int> table;
  absl::Notification started, release;
  std::atomic<int> failures{0};
  std::thread owner([&] {
    auto v = table.Get("k", [&]() -> absl::StatusOr<std::shared_ptr<const int>> {
      started.Notify();
      release.WaitForNotification();
      return absl::InternalError("compile failed: boom");
    });
    if (!v.ok()) ++failures;
  });
  started.WaitForNotification();
  std::vector<std::thread> waiters;
  for (int i = 0; i < 8; ++i) {
    waiters.emplace_back([&] {
      bool ran = true;
      auto v = table.Get(
          "k",
          [&]() -> absl::StatusOr<std::shared_ptr<const int>> {
            return std::make_shared<const int>(7);  // only if it arrives after the failure
          },
          &ran);
      if (!ran) {
        EXPECT_THAT(v, StatusIs(absl::StatusCode::kInternal, HasSubstr("boom")));
        ++failures;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release.Notify();
  owner.join();
  for (auto& t : waiters) t.join();
  EXPECT_GE(failures.load(), 1);
  auto retry = table.Get("k", [] {
    return absl::StatusOr<std::shared_ptr<const int>>(std::make_shared<const int>(9));
  });
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(**retry, 9);
}

}  // namespace
}  // namespace jitgemm::jit
