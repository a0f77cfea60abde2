// ThreadSanitizer builds only: makes Debian's abseil synchronisation visible to TSan.
//
// Debian's libabsl_synchronization is not built with TSan, so absl::Mutex (ours, and gRPC's,
// which uses it too) locks and unlocks with atomics TSan never sees: every variable guarded by
// an absl::Mutex would be reported as a race. This shared library is linked into every TSan
// executable ahead of abseil, so its definitions of the out-of-line Mutex, CondVar and
// Notification entry points interpose on abseil's (for gRPC's calls too); each calls the real
// function (dlsym RTLD_NEXT) and tells TSan the happens-before edge it implies: unlock releases
// the mutex's address, lock acquires it. Only happens-before is modelled (no lock-order graph).
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace {

// The next definition of `mangled` after this library: abseil's own.
template <typename Fn>
Fn* Real(const char* mangled) {
  void* f = dlsym(RTLD_NEXT, mangled);
  if (f == nullptr) {
    std::fprintf(stderr, "tsan absl annotations: %s not found\n", mangled);
    std::abort();
  }
  return reinterpret_cast<Fn*>(f);
}

// Declares `real`, abseil's function of that mangled name and type (the type last: it may hold
// commas).
#define REAL(mangled, ...) static auto* const real = Real<__VA_ARGS__>(mangled)

void Acquire(const void* m) { __tsan_acquire(const_cast<void*>(m)); }
void Release(const void* m) { __tsan_release(const_cast<void*>(m)); }

// A condition is evaluated with the mutex held, by the waiter or by the thread unlocking it (not
// through a call this library can interpose): wrapped, it acquires the mutex's address before and
// releases it after, like a critical section of its own.
//
// The wrapper and the caller's condition live on the waiter's stack, and abseil hands them to the
// unlocking thread through its own queue, which TSan cannot see. So the waiter releases the
// wrapper's address once both are built (Wrapped) and the evaluation acquires it before reading
// either. The wrapper goes through Condition's void* form, whose cast and call are inside abseil
// (uninstrumented): the typed form's would be compiled here and read the Condition unordered.
struct Acquiring {
  const absl::Condition* cond;
  const absl::Mutex* mu;
};
bool EvalAcquiring(void* arg) {
  Acquire(arg);
  const auto* a = static_cast<const Acquiring*>(arg);
  Acquire(a->mu);
  const bool holds = a->cond->Eval();
  Release(a->mu);  // what it read is before whatever the next holder writes
  return holds;
}
absl::Condition Wrapped(Acquiring* a) {
  Release(a);
  return absl::Condition(&EvalAcquiring, static_cast<void*>(a));
}

}  // namespace

namespace absl {
ABSL_NAMESPACE_BEGIN

void Mutex::Lock() {
  REAL("_ZN4absl7debian35Mutex4LockEv", void(Mutex*));
  real(this);
  Acquire(this);
}
void Mutex::ReaderLock() {
  REAL("_ZN4absl7debian35Mutex10ReaderLockEv", void(Mutex*));
  real(this);
  Acquire(this);
}
bool Mutex::TryLock() {
  REAL("_ZN4absl7debian35Mutex7TryLockEv", bool(Mutex*));
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}
bool Mutex::ReaderTryLock() {
  REAL("_ZN4absl7debian35Mutex13ReaderTryLockEv", bool(Mutex*));
  const bool locked = real(this);
  if (locked) Acquire(this);
  return locked;
}
void Mutex::Unlock() {
  REAL("_ZN4absl7debian35Mutex6UnlockEv", void(Mutex*));
  Release(this);
  real(this);
}
void Mutex::ReaderUnlock() {
  REAL("_ZN4absl7debian35Mutex12ReaderUnlockEv", void(Mutex*));
  Release(this);
  real(this);
}

// Lock-when and await: the condition is evaluated with the mutex held; the caller holds it on
// return, whatever the outcome.
void Mutex::LockWhen(const Condition& cond) {
  REAL("_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE", void(Mutex*, const Condition&));
  Acquiring a{&cond, this};
  real(this, Wrapped(&a));
  Acquire(this);
}
void Mutex::ReaderLockWhen(const Condition& cond) {
  REAL("_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE", void(Mutex*, const Condition&));
  Acquiring a{&cond, this};
  real(this, Wrapped(&a));
  Acquire(this);
}
bool Mutex::LockWhenWithTimeout(const Condition& cond, Duration timeout) {
  REAL("_ZN4absl7debian35Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE",
       bool(Mutex*, const Condition&, Duration));
  Acquiring a{&cond, this};
  const bool r = real(this, Wrapped(&a), timeout);
  Acquire(this);
  return r;
}
bool Mutex::LockWhenWithDeadline(const Condition& cond, Time deadline) {
  REAL("_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE",
       bool(Mutex*, const Condition&, Time));
  Acquiring a{&cond, this};
  const bool r = real(this, Wrapped(&a), deadline);
  Acquire(this);
  return r;
}
void Mutex::Await(const Condition& cond) {
  REAL("_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE", void(Mutex*, const Condition&));
  Release(this);
  Acquiring a{&cond, this};
  real(this, Wrapped(&a));
  Acquire(this);
}
bool Mutex::AwaitWithTimeout(const Condition& cond, Duration timeout) {
  REAL("_ZN4absl7debian35Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE",
       bool(Mutex*, const Condition&, Duration));
  Release(this);
  Acquiring a{&cond, this};
  const bool r = real(this, Wrapped(&a), timeout);
  Acquire(this);
  return r;
}
bool Mutex::AwaitWithDeadline(const Condition& cond, Time deadline) {
  REAL("_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE",
       bool(Mutex*, const Condition&, Time));
  Release(this);
  Acquiring a{&cond, this};
  const bool r = real(this, Wrapped(&a), deadline);
  Acquire(this);
  return r;
}

void CondVar::Wait(Mutex* mu) {
  REAL("_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE", void(CondVar*, Mutex*));
  Release(mu);
  real(this, mu);
  Acquire(mu);
}
bool CondVar::WaitWithTimeout(Mutex* mu, Duration timeout) {
  REAL("_ZN4absl7debian37CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE",
       bool(CondVar*, Mutex*, Duration));
  Release(mu);
  const bool r = real(this, mu, timeout);
  Acquire(mu);
  return r;
}
bool CondVar::WaitWithDeadline(Mutex* mu, Time deadline) {
  REAL("_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE",
       bool(CondVar*, Mutex*, Time));
  Release(mu);
  const bool r = real(this, mu, deadline);
  Acquire(mu);
  return r;
}

void ReleasableMutexLock::Release() {
  REAL("_ZN4absl7debian319ReleasableMutexLock7ReleaseEv", void(ReleasableMutexLock*));
  ::Release(mu_);
  real(this);
}

// HasBeenNotified() is an inline acquire load of notified_yet_ (instrumented in our code); the
// store that pairs with it is inside abseil. Release both the flag and the mutex beside it.
void Notification::Notify() {
  REAL("_ZN4absl7debian312Notification6NotifyEv", void(Notification*));
  ::Release(&notified_yet_);
  ::Release(&mutex_);
  real(this);
}
// The waits return at once when the flag is already set, through abseil's own load of it (no
// lock taken, nothing this library sees): acquire the flag on every notified return.
void Notification::WaitForNotification() const {
  REAL("_ZNK4absl7debian312Notification19WaitForNotificationEv", void(const Notification*));
  real(this);
  ::Acquire(&notified_yet_);
}
bool Notification::WaitForNotificationWithTimeout(Duration timeout) const {
  REAL("_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE",
       bool(const Notification*, Duration));
  const bool notified = real(this, timeout);
  if (notified) ::Acquire(&notified_yet_);
  return notified;
}
bool Notification::WaitForNotificationWithDeadline(Time deadline) const {
  REAL("_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE",
       bool(const Notification*, Time));
  const bool notified = real(this, deadline);
  if (notified) ::Acquire(&notified_yet_);
  return notified;
}

ABSL_NAMESPACE_END
}  // namespace absl
