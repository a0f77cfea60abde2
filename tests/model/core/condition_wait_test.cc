// Waits on abseil conditions that another thread satisfies while the waiter is blocked: the
// unlocking thread then evaluates the waiter's condition, built on the waiter's stack. Under
// ThreadSanitizer (cmake/tsan/absl_sync_annotations.cc) that evaluation must be ordered after
// the condition's construction, or TSan reports a race inside abseil and the test fails; in
// other builds these check that each wait wakes with the notifier's writes visible.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"

namespace transerve {
namespace {

// Long enough for the waiter to be parked inside abseil before the other thread acts.
constexpr absl::Duration kWaiterParks = absl::Milliseconds(30);

int RandomValue() {
  std::random_device rd;
  return std::uniform_int_distribution<int>(1, 1 << 30)(rd);
}

TEST(ConditionWait, NotificationWaitedWithADeadlineSeesTheNotifiersWrite) {
  for (int round = 0; round < 5; ++round) {
    const int expected = RandomValue();
    int value = 0;
    absl::Notification done;
    std::thread notifier([&] {
      absl::SleepFor(kWaiterParks);
      value = expected;
      done.Notify();
    });
    ASSERT_TRUE(done.WaitForNotificationWithDeadline(absl::Now() + absl::Seconds(30)));
    EXPECT_EQ(value, expected);
    notifier.join();
  }
}

class Box {
 public:
  void Put(int v) {
    absl::MutexLock lock(&mu_);
    value_ = v;
  }
  // LockWhen on a method condition built here.
  int TakeWhenFull() {
    absl::MutexLock lock(&mu_, absl::Condition(this, &Box::Full));
    return value_;
  }
  // Await, the mutex already held.
  int AwaitFullWithDeadline(absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    if (!mu_.AwaitWithDeadline(absl::Condition(this, &Box::Full), deadline)) return -1;
    return value_;
  }

 private:
  bool Full() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return value_ != 0; }
  absl::Mutex mu_;
  int value_ ABSL_GUARDED_BY(mu_) = 0;
};

// The notifier races the waiter: sometimes it finds the waiter queued but not yet parked, the
// case where abseil evaluates the waiter's condition on the notifier's thread soonest.
TEST(ConditionWait, NotificationRacingItsWaiterSeesTheNotifiersWrite) {
  for (int round = 0; round < 2000; ++round) {
    const int expected = round + 1;
    int value = 0;
    absl::Notification done;
    std::thread notifier([&] {
      value = expected;
      done.Notify();
    });
    ASSERT_TRUE(done.WaitForNotificationWithDeadline(absl::Now() + absl::Seconds(30)));
    EXPECT_EQ(value, expected);
    notifier.join();
  }
}

TEST(ConditionWait, LockWhenOnAMethodConditionWakesWithTheValue) {
  for (int round = 0; round < 5; ++round) {
    Box box;
    const int expected = RandomValue();
    std::thread producer([&] {
      absl::SleepFor(kWaiterParks);
      box.Put(expected);
    });
    EXPECT_EQ(box.TakeWhenFull(), expected);
    producer.join();
  }
}

TEST(ConditionWait, AwaitWithADeadlineWakesWithTheValue) {
  for (int round = 0; round < 5; ++round) {
    Box box;
    const int expected = RandomValue();
    std::thread producer([&] {
      absl::SleepFor(kWaiterParks);
      box.Put(expected);
    });
    EXPECT_EQ(box.AwaitFullWithDeadline(absl::Now() + absl::Seconds(30)), expected);
    producer.join();
  }
}

}  // namespace
}  // namespace transerve
