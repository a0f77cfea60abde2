// Running a kernel's grid on the host: blocks one after another; a block's threads are fibers
// on the launching thread, each run until it reaches a barrier (__syncthreads, a warp shuffle)
// or returns. When every live thread of a block (or of a warp, for a shuffle) waits, they are
// released together; threads waiting at different barriers is a deadlock, reported as on a GPU
// it would hang.
#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_runtime.h"
#include "tests/model/cuda/emulator/emulator.h"

// Globals, not thread-locals: grids run one at a time under the device's lock (DeviceAccess).
uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;

// Saves the callee-saved registers and the floating-point control words on the current stack,
// stores the stack pointer in *save, and resumes the context whose stack pointer is `resume`.
extern "C" void transerve_emulator_switch(void** save, void* resume);
asm(R"(
  .text
  .p2align 4
  .type transerve_emulator_switch,@function
transerve_emulator_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size transerve_emulator_switch, .-transerve_emulator_switch
  .section .note.GNU-stack,"",@progbits
  .text
)");

namespace transerve_cuda_emulator {
namespace {

constexpr size_t kStackBytes = 256 * 1024;
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr size_t kMaxSharedBytes = 48 * 1024;  // without the opt-in attribute
constexpr unsigned kWarp = 32;

enum class State { kReady, kWarpBarrier, kBlockBarrier, kDone };

struct Fiber {
  void* stack_pointer = nullptr;
  State state = State::kReady;
  uint3 index{};
  unsigned shuffles = 0;  // how many this thread has made: picks its exchange buffer
};

struct Block {
  std::vector<Fiber> fibers;
  // Two slots per thread for shuffles, used alternately: a lane cannot write its next value
  // before every lane has passed this shuffle's barrier, by which time all have read.
  std::vector<uint64_t> exchange[2];
  void* scheduler_stack_pointer = nullptr;
  size_t current = 0;
  void (*body)(void*) = nullptr;
  void* context = nullptr;
};

Block* running = nullptr;
std::vector<unsigned char> dynamic_shared;

// Fiber stacks, mapped once and reused by every block.
char* Stacks(size_t count) {
  static char* stacks = nullptr;
  static size_t mapped = 0;
  if (count > mapped) {
    if (stacks != nullptr) munmap(stacks, mapped * kStackBytes);
    void* p = mmap(nullptr, count * kStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) Fail("cannot map fiber stacks");
    stacks = static_cast<char*>(p);
    mapped = count;
  }
  return stacks;
}

[[noreturn]] void FiberEntry() {
  Block* block = running;
  block->body(block->context);
  Fiber& self = block->fibers[block->current];
  self.state = State::kDone;
  void* unused = nullptr;
  transerve_emulator_switch(&unused, block->scheduler_stack_pointer);
  __builtin_unreachable();
}

// A fresh context on `stack_top` that starts in FiberEntry when switched to.
void* NewContext(char* stack_top) {
  auto* sp = reinterpret_cast<uint64_t*>(reinterpret_cast<uintptr_t>(stack_top) & ~uintptr_t{15});
  *--sp = 0;  // FiberEntry's return address: it never returns
  *--sp = reinterpret_cast<uint64_t>(&FiberEntry);
  for (int r = 0; r < 6; ++r) *--sp = 0;  // rbp rbx r12-r15
  uint32_t control[2];
  asm volatile("stmxcsr %0" : "=m"(control[0]));
  asm volatile("fnstcw %0" : "=m"(control[1]));
  *--sp = (static_cast<uint64_t>(control[1] & 0xFFFF) << 32) | control[0];
  return sp;
}

void Wait(State barrier) {
  Block* block = running;
  if (block == nullptr) Fail("a barrier or shuffle outside a kernel");
  Fiber& self = block->fibers[block->current];
  self.state = barrier;
  transerve_emulator_switch(&self.stack_pointer, block->scheduler_stack_pointer);
}

// Releases the threads whose barrier every live thread of its scope has reached; false when no
// barrier can be released (a deadlock).
bool ReleaseBarriers(Block& block) {
  bool all_at_block_barrier = true;
  for (const Fiber& f : block.fibers) {
    if (f.state != State::kDone && f.state != State::kBlockBarrier) all_at_block_barrier = false;
  }
  if (all_at_block_barrier) {
    for (Fiber& f : block.fibers) {
      if (f.state == State::kBlockBarrier) f.state = State::kReady;
    }
    return true;
  }
  bool released = false;
  for (size_t first = 0; first < block.fibers.size(); first += kWarp) {
    const size_t last = std::min(block.fibers.size(), first + kWarp);
    bool all_at_warp_barrier = true, any = false;
    for (size_t t = first; t < last; ++t) {
      const State s = block.fibers[t].state;
      if (s == State::kWarpBarrier) any = true;
      if (s != State::kDone && s != State::kWarpBarrier) all_at_warp_barrier = false;
    }
    if (all_at_warp_barrier && any) {
      for (size_t t = first; t < last; ++t) {
        if (block.fibers[t].state == State::kWarpBarrier) block.fibers[t].state = State::kReady;
      }
      released = true;
    }
  }
  return released;
}

void RunBlock(Block& block, char* stacks) {
  for (size_t t = 0; t < block.fibers.size(); ++t) {
    block.fibers[t].state = State::kReady;
    block.fibers[t].shuffles = 0;
    block.fibers[t].stack_pointer = NewContext(stacks + (t + 1) * kStackBytes);
  }
  std::fill(dynamic_shared.begin(), dynamic_shared.end(), 0xFF);  // NaN floats, -1 integers
  running = &block;
  for (;;) {
    bool all_done = true;
    for (size_t t = 0; t < block.fibers.size(); ++t) {
      Fiber& f = block.fibers[t];
      if (f.state == State::kReady) {
        block.current = t;
        threadIdx = f.index;
        transerve_emulator_switch(&block.scheduler_stack_pointer, f.stack_pointer);
      }
      if (f.state != State::kDone) all_done = false;
    }
    if (all_done) break;
    if (!ReleaseBarriers(block)) {
      Fail("kernel deadlock: the threads of a block wait at different barriers");
    }
  }
  running = nullptr;
}

}  // namespace

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "CUDA emulator: %s\n", what);
  std::abort();
}

void RunGrid(dim3 grid, dim3 block_dim, size_t shared_bytes, void (*body)(void*), void* context) {
  if (const cudaError_t sticky = StickyError(); sticky != cudaSuccess) {
    RecordError(sticky);
    return;
  }
  const size_t threads = static_cast<size_t>(block_dim.x) * block_dim.y * block_dim.z;
  if (threads == 0 || threads > kMaxThreadsPerBlock || block_dim.z > 64 || grid.x == 0 ||
      grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || grid.x > 0x7FFFFFFFu) {
    RecordError(cudaErrorInvalidConfiguration);
    return;
  }
  if (shared_bytes > kMaxSharedBytes) {
    RecordError(cudaErrorInvalidValue);
    return;
  }
  // Device memory is readable only while kernels and copies run. The access also holds the
  // device's lock, so grids of two host threads take turns: `running` is checked under it (a
  // grid of another thread would otherwise look like a launch from inside a kernel).
  const DeviceAccess access;
  if (running != nullptr) Fail("a kernel launched from inside a kernel");
  Block block;
  block.body = body;
  block.context = context;
  block.fibers.resize(threads);
  block.exchange[0].resize(threads);
  block.exchange[1].resize(threads);
  for (unsigned z = 0, t = 0; z < block_dim.z; ++z) {
    for (unsigned y = 0; y < block_dim.y; ++y) {
      for (unsigned x = 0; x < block_dim.x; ++x, ++t) block.fibers[t].index = {x, y, z};
    }
  }
  dynamic_shared.assign(shared_bytes, 0xFF);
  char* stacks = Stacks(threads);
  gridDim = grid;
  blockDim = block_dim;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        RunBlock(block, stacks);
      }
    }
  }
}

void* DynamicSharedMemory() { return dynamic_shared.data(); }

uint64_t ShuffleDown(uint64_t bits, unsigned delta, unsigned mask, int width) {
  if (mask != 0xFFFFFFFFu || width != static_cast<int>(kWarp)) {
    Fail("__shfl_down_sync: only full-warp shuffles are emulated");
  }
  Block* block = running;
  if (block == nullptr) Fail("a shuffle outside a kernel");
  const size_t t = block->current;
  std::vector<uint64_t>& exchange = block->exchange[block->fibers[t].shuffles++ % 2];
  exchange[t] = bits;
  Wait(State::kWarpBarrier);  // every lane has written
  const size_t lane = t % kWarp, source = t + delta;
  return lane + delta < kWarp && source < block->fibers.size() ? exchange[source] : bits;
}

}  // namespace transerve_cuda_emulator

void __syncthreads() {
  transerve_cuda_emulator::Wait(transerve_cuda_emulator::State::kBlockBarrier);
}
