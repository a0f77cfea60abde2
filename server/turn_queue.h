// The scheduler's queue: sentences served in turns by request, not first come, first served.
// Each request (one Scheduler::Submit) is a flow; its k-th queued sentence gets the turn after
// its previous one, and never a turn before the one being served now (start-time fair queuing,
// counted in sentences). So a document of a thousand sentences and a one-sentence call that
// arrives after it are admitted turn by turn: the call waits for one of the document's
// sentences, not for all of them. A request's own sentences keep their order. Items sent back
// to the front (preempted sentences, already admitted once) come before every turn.
//
// Not thread-safe: the scheduler's loop thread owns it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>

namespace transerve {

template <typename T>
class TurnQueue {
 public:
  // A request's place in the turns; one per request, kept by its items' owner.
  struct Flow {
    int64_t next_turn = 0;
  };

 private:
  struct Key {
    int64_t turn;
    int64_t sequence;  // arrival order within a turn
    bool operator<(const Key& o) const {
      return turn != o.turn ? turn < o.turn : sequence < o.sequence;
    }
  };
  using Items = std::map<Key, T>;

 public:
  using iterator = typename Items::iterator;
  using const_iterator = typename Items::const_iterator;

  // Queues `item` as `flow`'s next sentence.
  void Push(Flow& flow, T item) {
    const int64_t turn = std::max(flow.next_turn, served_turn_ + 1);
    flow.next_turn = turn + 1;
    items_.emplace(Key{turn, next_sequence_++}, std::move(item));
  }
  // Queues `item` before every turn (the latest pushed this way comes first).
  void PushFront(T item) { items_.emplace(Key{kFrontTurn, front_sequence_--}, std::move(item)); }
  // Removes the item at `it` (in turn order) and returns it; its turn counts as served.
  T Take(iterator it) {
    if (it->first.turn != kFrontTurn) served_turn_ = std::max(served_turn_, it->first.turn);
    T item = std::move(it->second);
    items_.erase(it);
    return item;
  }
  // Removes the item without serving its turn (it left the queue: deadline, cancellation).
  iterator Erase(iterator it) { return items_.erase(it); }

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }

 private:
  static constexpr int64_t kFrontTurn = std::numeric_limits<int64_t>::min();
  Items items_;
  int64_t served_turn_ = 0;  // the latest turn taken
  int64_t next_sequence_ = 0;
  int64_t front_sequence_ = -1;
};

}  // namespace transerve
