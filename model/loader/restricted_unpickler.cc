// The unpickler is a stack machine over an arena of values; each opcode checks its operands and
// the input bounds, and the arena, stack and memo are capped so a hostile pickle cannot grow
// memory beyond a small multiple of its own size.
#include "model/loader/restricted_unpickler.h"

#include <bit>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace transerve {
namespace {

constexpr std::size_t kMaxValues = 1 << 22;  // far above a Marian state dict's ~10^3 values
constexpr std::size_t kMaxStack = 1 << 20;

// The callables REDUCE may apply and the storage types a persistent id may name.
constexpr std::string_view kOrderedDict = "collections.OrderedDict";
constexpr std::string_view kRebuildTensorV2 = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildTensor = "torch._utils._rebuild_tensor";
constexpr std::string_view kRebuildParameter = "torch._utils._rebuild_parameter";

const char* StorageDtype(std::string_view global) {
  if (global == "torch.FloatStorage") return "F32";
  if (global == "torch.HalfStorage") return "F16";
  if (global == "torch.BFloat16Storage") return "BF16";
  return nullptr;
}

bool AllowedGlobal(std::string_view g) {
  return g == kOrderedDict || g == kRebuildTensorV2 || g == kRebuildTensor ||
         g == kRebuildParameter || StorageDtype(g) != nullptr;
}

class Machine {
 public:
  Machine(std::span<const uint8_t> data, const std::string& where) : in_(data), where_(where) {}

  absl::StatusOr<Unpickled> Run() {
    while (true) {
      if (pos_ >= in_.size()) return Fail("the pickle ends before its STOP opcode");
      op_pos_ = pos_;
      op_ = in_[pos_++];
      absl::Status s = Step();
      if (!s.ok()) return s;
      if (stopped_) break;
    }
    Unpickled out;
    out.values = std::move(values_);
    out.root = root_;
    out.end = pos_;
    return out;
  }

 private:
  absl::Status Fail(const std::string& why) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": pickle offset ", op_pos_,
                                                   " (opcode 0x", absl::Hex(op_, absl::kZeroPad2),
                                                   "): ", why));
  }

  bool Take(std::size_t n, const uint8_t** p) {
    if (in_.size() - pos_ < n) return false;
    *p = in_.data() + pos_;
    pos_ += n;
    return true;
  }
  bool TakeUint(std::size_t n, uint64_t* v) {
    const uint8_t* p;
    if (!Take(n, &p)) return false;
    *v = 0;
    for (std::size_t i = 0; i < n; ++i) *v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return true;
  }
  // Reads up to '\n' (GLOBAL's text operands).
  bool TakeLine(std::string* line) {
    const auto* begin = in_.data() + pos_;
    const void* nl = std::memchr(begin, '\n', in_.size() - pos_);
    if (nl == nullptr) return false;
    const auto n = static_cast<std::size_t>(static_cast<const uint8_t*>(nl) - begin);
    line->assign(reinterpret_cast<const char*>(begin), n);
    pos_ += n + 1;
    return true;
  }

  absl::StatusOr<uint32_t> New(PickleValue v) {
    if (values_.size() >= kMaxValues) return Fail("too many values");
    values_.push_back(std::move(v));
    return static_cast<uint32_t>(values_.size() - 1);
  }
  absl::Status Push(absl::StatusOr<uint32_t> v) {
    if (!v.ok()) return v.status();
    if (stack_.size() >= kMaxStack) return Fail("the stack is too deep");
    stack_.push_back(*v);
    return absl::OkStatus();
  }
  absl::Status PushKind(PickleKind kind) {
    PickleValue v;
    v.kind = kind;
    return Push(New(std::move(v)));
  }
  absl::Status PushInt(int64_t n) {
    PickleValue v;
    v.kind = PickleKind::kInt;
    v.number = n;
    return Push(New(std::move(v)));
  }
  absl::Status PushString(std::size_t n) {
    const uint8_t* p;
    if (!Take(n, &p)) return Fail("the string runs past the end of the input");
    PickleValue v;
    v.kind = PickleKind::kString;
    v.text.assign(reinterpret_cast<const char*>(p), n);
    return Push(New(std::move(v)));
  }

  bool Pop(uint32_t* v) {
    if (stack_.size() <= Floor()) return false;
    *v = stack_.back();
    stack_.pop_back();
    return true;
  }
  std::size_t Floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The items since the last MARK, which is removed.
  absl::StatusOr<std::vector<uint32_t>> PopMark() {
    if (marks_.empty()) return Fail("no MARK to pop to");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }
  absl::Status Tuple(std::size_t n) {
    if (stack_.size() - Floor() < n) return Fail("too few items for a tuple");
    PickleValue v;
    v.kind = PickleKind::kTuple;
    v.items.assign(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return Push(New(std::move(v)));
  }
  // The container under the pushed items, which must have kind `kind`.
  absl::Status Extend(PickleKind kind, std::vector<uint32_t> items) {
    if (stack_.size() <= Floor()) return Fail("no container to add items to");
    PickleValue& target = values_[stack_.back()];
    if (target.kind != kind) return Fail("items added to a value of the wrong type");
    if (kind == PickleKind::kDict) {
      if (items.size() % 2 != 0) return Fail("a dict update with an odd number of items");
      for (std::size_t i = 0; i < items.size(); i += 2) {
        if (values_[items[i]].kind != PickleKind::kString &&
            values_[items[i]].kind != PickleKind::kInt) {
          return Fail("a dict key that is neither a string nor an int");
        }
      }
    }
    if (target.items.size() + items.size() > kMaxValues) return Fail("a container is too large");
    target.items.insert(target.items.end(), items.begin(), items.end());
    return absl::OkStatus();
  }
  absl::Status Memo(uint64_t key) {
    if (stack_.size() <= Floor()) return Fail("nothing to memoize");
    if (memo_.size() >= kMaxValues) return Fail("too many memo entries");
    memo_[key] = stack_.back();
    return absl::OkStatus();
  }
  absl::Status Get(uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) return Fail(absl::StrCat("memo key ", key, " was never put"));
    if (stack_.size() >= kMaxStack) return Fail("the stack is too deep");
    stack_.push_back(it->second);
    return absl::OkStatus();
  }
  absl::Status Global(std::string module, std::string name) {
    const std::string full = absl::StrCat(module, ".", name);
    if (!AllowedGlobal(full)) {
      return Fail(absl::StrCat("refused global '", absl::Utf8SafeCHexEscape(full.substr(0, 200)),
                               "': a checkpoint may only name tensor rebuilders, storage "
                               "types and OrderedDict"));
    }
    PickleValue v;
    v.kind = PickleKind::kGlobal;
    v.text = full;
    return Push(New(std::move(v)));
  }

  bool IsIntTuple(uint32_t index, std::vector<int64_t>* out) const {
    const PickleValue& v = values_[index];
    if (v.kind != PickleKind::kTuple) return false;
    out->clear();
    for (uint32_t item : v.items) {
      if (values_[item].kind != PickleKind::kInt) return false;
      out->push_back(values_[item].number);
    }
    return true;
  }

  // ('storage', storage type, key, location, numel[, view metadata None]).
  absl::Status PersistentLoad(uint32_t pid) {
    const PickleValue& t = values_[pid];
    const auto kind = [&](std::size_t i) { return values_[t.items[i]].kind; };
    if (t.kind != PickleKind::kTuple || (t.items.size() != 5 && t.items.size() != 6) ||
        kind(0) != PickleKind::kString || values_[t.items[0]].text != "storage" ||
        kind(1) != PickleKind::kGlobal || StorageDtype(values_[t.items[1]].text) == nullptr ||
        kind(2) != PickleKind::kString || kind(3) != PickleKind::kString ||
        kind(4) != PickleKind::kInt || values_[t.items[4]].number < 0 ||
        (t.items.size() == 6 && kind(5) != PickleKind::kNone)) {
      return Fail(
          "refused persistent id: only ('storage', Float/Half/BFloat16Storage, key, location, "
          "numel) is accepted");
    }
    PickleValue v;
    v.kind = PickleKind::kStorage;
    v.dtype = StorageDtype(values_[t.items[1]].text);
    v.text = values_[t.items[2]].text;
    v.number = values_[t.items[4]].number;
    return Push(New(std::move(v)));
  }

  absl::Status Reduce(uint32_t callable, uint32_t args_index) {
    const PickleValue& f = values_[callable];
    const PickleValue& args = values_[args_index];
    if (f.kind != PickleKind::kGlobal || args.kind != PickleKind::kTuple) {
      return Fail("REDUCE applies only an allowed global to a tuple");
    }
    const std::vector<uint32_t> a = args.items;
    const auto kind = [&](std::size_t i) { return values_[a[i]].kind; };
    if (f.text == kOrderedDict) {
      if (!a.empty()) return Fail("OrderedDict() takes no arguments here");
      return PushKind(PickleKind::kDict);
    }
    if (f.text == kRebuildParameter) {
      // (data, requires_grad, backward_hooks): the parameter is its tensor.
      if (a.size() != 3 || kind(0) != PickleKind::kTensor || kind(1) != PickleKind::kBool ||
          kind(2) != PickleKind::kDict) {
        return Fail("_rebuild_parameter takes (tensor, bool, OrderedDict)");
      }
      stack_.push_back(a[0]);
      return absl::OkStatus();
    }
    if (f.text == kRebuildTensorV2 || f.text == kRebuildTensor) {
      // v2: (storage, offset, size, stride, requires_grad, backward_hooks[, metadata]);
      // v1: (storage, offset, size, stride).
      const bool v2 = f.text == kRebuildTensorV2;
      const bool arity = v2 ? (a.size() == 6 || a.size() == 7) : a.size() == 4;
      PickleValue t;
      t.kind = PickleKind::kTensor;
      if (!arity || kind(0) != PickleKind::kStorage || kind(1) != PickleKind::kInt ||
          !IsIntTuple(a[2], &t.shape) || !IsIntTuple(a[3], &t.stride) ||
          (v2 && (kind(4) != PickleKind::kBool || kind(5) != PickleKind::kDict ||
                  !values_[a[5]].items.empty())) ||
          (a.size() == 7 && kind(6) != PickleKind::kDict)) {
        return Fail(absl::StrCat(f.text, " called with arguments of the wrong shape"));
      }
      t.number = values_[a[1]].number;
      t.items = {a[0]};
      return Push(New(std::move(t)));
    }
    return Fail(absl::StrCat("REDUCE of '", f.text, "' is not allowed"));
  }

  absl::Status Step() {
    uint64_t n = 0;
    uint32_t a = 0, b = 0;
    switch (op_) {
      case 0x80: {  // PROTO
        if (!TakeUint(1, &n)) return Fail("truncated");
        if (n < 2 || n > 5) return Fail(absl::StrCat("pickle protocol ", n, " is not supported"));
        return absl::OkStatus();
      }
      case 0x95:  // FRAME: a length prefix only
        if (!TakeUint(8, &n)) return Fail("truncated");
        return absl::OkStatus();
      case '}':
        return PushKind(PickleKind::kDict);
      case ']':
        return PushKind(PickleKind::kList);
      case ')':
        return PushKind(PickleKind::kTuple);
      case 'N':
        return PushKind(PickleKind::kNone);
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        PickleValue v;
        v.kind = PickleKind::kBool;
        v.number = op_ == 0x88;
        return Push(New(std::move(v)));
      }
      case '(':  // MARK
        if (marks_.size() >= kMaxStack) return Fail("too many MARKs");
        marks_.push_back(stack_.size());
        return absl::OkStatus();
      case 't': {
        auto items = PopMark();
        if (!items.ok()) return items.status();
        PickleValue v;
        v.kind = PickleKind::kTuple;
        v.items = *std::move(items);
        return Push(New(std::move(v)));
      }
      case 0x85:
        return Tuple(1);
      case 0x86:
        return Tuple(2);
      case 0x87:
        return Tuple(3);
      case 'a':  // APPEND
        if (!Pop(&a)) return Fail("APPEND with an empty stack");
        return Extend(PickleKind::kList, {a});
      case 's':  // SETITEM
        if (!Pop(&b) || !Pop(&a)) return Fail("SETITEM with too few items");
        return Extend(PickleKind::kDict, {a, b});
      case 'e':
      case 'u': {  // APPENDS, SETITEMS
        auto items = PopMark();
        if (!items.ok()) return items.status();
        return Extend(op_ == 'e' ? PickleKind::kList : PickleKind::kDict, *std::move(items));
      }
      case 'K':
        if (!TakeUint(1, &n)) return Fail("truncated");
        return PushInt(static_cast<int64_t>(n));
      case 'M':
        if (!TakeUint(2, &n)) return Fail("truncated");
        return PushInt(static_cast<int64_t>(n));
      case 'J':
        if (!TakeUint(4, &n)) return Fail("truncated");
        return PushInt(static_cast<int32_t>(static_cast<uint32_t>(n)));
      case 0x8a: {  // LONG1: little-endian two's complement
        const uint8_t* p;
        if (!TakeUint(1, &n) || !Take(n, &p)) return Fail("truncated");
        if (n > 8) {
          PickleValue v;
          v.kind = PickleKind::kBigInt;
          v.text.assign(reinterpret_cast<const char*>(p), n);
          return Push(New(std::move(v)));
        }
        uint64_t u = 0;
        for (uint64_t i = 0; i < n; ++i) u |= static_cast<uint64_t>(p[i]) << (8 * i);
        if (n > 0 && n < 8 && (p[n - 1] & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign-extend
        return PushInt(static_cast<int64_t>(u));
      }
      case 'G': {  // BINFLOAT: big-endian binary64
        const uint8_t* p;
        if (!Take(8, &p)) return Fail("truncated");
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
        PickleValue v;
        v.kind = PickleKind::kFloat;
        v.real = std::bit_cast<double>(u);
        return Push(New(std::move(v)));
      }
      case 0x8c:  // SHORT_BINUNICODE
        if (!TakeUint(1, &n)) return Fail("truncated");
        return PushString(n);
      case 'X':  // BINUNICODE
        if (!TakeUint(4, &n)) return Fail("truncated");
        return PushString(n);
      case 0x8d:  // BINUNICODE8
        if (!TakeUint(8, &n)) return Fail("truncated");
        return PushString(n);
      case 'q':  // BINPUT
        if (!TakeUint(1, &n)) return Fail("truncated");
        return Memo(n);
      case 'r':  // LONG_BINPUT
        if (!TakeUint(4, &n)) return Fail("truncated");
        return Memo(n);
      case 0x94:  // MEMOIZE
        return Memo(memo_.size());
      case 'h':  // BINGET
        if (!TakeUint(1, &n)) return Fail("truncated");
        return Get(n);
      case 'j':  // LONG_BINGET
        if (!TakeUint(4, &n)) return Fail("truncated");
        return Get(n);
      case 'c': {  // GLOBAL "module\nname\n"
        std::string module, name;
        if (!TakeLine(&module) || !TakeLine(&name)) return Fail("truncated GLOBAL");
        return Global(std::move(module), std::move(name));
      }
      case 0x93: {  // STACK_GLOBAL
        if (!Pop(&b) || !Pop(&a)) return Fail("STACK_GLOBAL with too few items");
        if (values_[a].kind != PickleKind::kString || values_[b].kind != PickleKind::kString) {
          return Fail("STACK_GLOBAL needs two strings");
        }
        return Global(values_[a].text, values_[b].text);
      }
      case 'Q':  // BINPERSID
        if (!Pop(&a)) return Fail("BINPERSID with an empty stack");
        return PersistentLoad(a);
      case 'R':  // REDUCE
        if (!Pop(&b) || !Pop(&a)) return Fail("REDUCE with too few items");
        return Reduce(a, b);
      case 'b': {  // BUILD: only an OrderedDict's attributes (a state dict's _metadata), ignored
        if (!Pop(&b) || stack_.size() <= Floor()) return Fail("BUILD with too few items");
        const PickleKind state = values_[b].kind;
        if (values_[stack_.back()].kind != PickleKind::kDict ||
            (state != PickleKind::kDict && state != PickleKind::kNone)) {
          return Fail("BUILD is accepted only on an OrderedDict with a dict of attributes");
        }
        return absl::OkStatus();
      }
      case '.':  // STOP
        if (stack_.size() != 1 || !marks_.empty()) {
          return Fail("STOP with other than one value on the stack");
        }
        root_ = stack_.back();
        stopped_ = true;
        return absl::OkStatus();
      default:
        return Fail("opcode not supported by the restricted unpickler");
    }
  }

  std::span<const uint8_t> in_;
  const std::string& where_;
  std::size_t pos_ = 0, op_pos_ = 0;
  uint8_t op_ = 0;
  bool stopped_ = false;
  std::vector<PickleValue> values_;
  std::vector<uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<uint64_t, uint32_t> memo_;
  uint32_t root_ = 0;
};

}  // namespace

absl::StatusOr<Unpickled> RestrictedUnpickle(std::span<const uint8_t> data,
                                             const std::string& where) {
  return Machine(data, where).Run();
}

}  // namespace transerve
