// ferrite/logging/tpcc.h — the StrandWeaver paper's TPCC workload (Table
// II: "New Order trans. from TPCC"), simplified, as a persistent structure
// on the failure-atomic logging library (logging/undo_log.h).
//
// What it is. One warehouse's districts (each with its next order id and
// its list of orders) and its stock (a quantity per item). new_order(d,
// seed) is the TPC-C New-Order transaction (TPC Benchmark C, Standard
// Specification, §2.4) reduced to its persistent stores, in ONE failure-
// atomic region: read and increment the district's next order id, create
// the order with its order lines, link it into the district, and update the
// stock of every line's item (s_quantity - qty, plus 91 when it would fall
// below 10, §2.4.2.2). The lines are a function of `seed` (order_lines):
// 2 to 5 lines, items drawn at random, so an item may repeat and one stock
// row be stored twice in a region. Customer, history, new-order and item
// tables are left out: they add reads or appends, not new failure-atomicity
// cases. Locks: the district's, then the stock stripes of the order's
// items in increasing order (the StrandWeaver paper, §VI: "TPCC acquires
// multiple locks per new order transaction"). Paper: Vaibhav Gogte et al.,
// "Relaxed Persist Ordering Using Strand Persistency", ISCA 2020, Table II.
//
// Thread safety: every member may be called concurrently with distinct tids.
// Invariants (between regions): district d's orders have ids 1 ..
// next_o_id(d) - 1, newest first in its list; every stock quantity stays
// positive (§2.4.2.2 restocks by 91 below 10).
// Persistence: new_order is failure-atomic and durable when it returns
// (undo_log.h P1-P3); the order block is allocated and initialised in the
// region (Logger::init: an undone region leaves it unreachable, and pool
// recovery frees it).
// Recovery: the root hook runs logging::recover_area, then traces the
// rolled-back districts' order lists.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "ferrite/logging/workloads.h"

namespace ferrite::logging {

class LoggedTpcc {
 public:
  static constexpr int kStockLocks = 16;
  static constexpr int kMaxDistricts = 16;
  static constexpr std::uint64_t kMaxLines = 5;
  struct Line {
    std::int64_t item;
    std::int64_t qty;
  };
  struct Order {
    std::int64_t o_id;
    std::uint64_t ol_cnt;
    Order* next;  // the district's previous (older) order
    std::uint64_t pad;
    Line lines[kMaxLines];
  };
  struct District {
    std::int64_t next_o_id;
    Order* orders;  // newest first
  };
  struct Root {
    static constexpr std::uint32_t kTypeTag = 0x4C47'5443;  // "LGTC"
    static constexpr std::uint32_t kTypeVersion = 1;
    static constexpr const char* kTypeName = "logging::LoggedTpcc";
    LogArea log{};
    alignas(64) District* districts = nullptr;  // set once, after the tables are durable
    std::int64_t* stock = nullptr;
    std::uint64_t nd = 0;
    std::uint64_t ni = 0;
  };
  static_assert(offsetof(Root, log) == 0);
  static_assert(offsetof(Root, districts) == 576);
  static_assert(offsetof(Root, stock) == 584);
  static_assert(offsetof(Root, nd) == 592);
  static_assert(offsetof(Root, ni) == 600);
  static_assert(sizeof(Order) == 32 + 16 * kMaxLines);
  static_assert(sizeof(District) == 16);

  // The lines of the order drawn with `seed` over `items` items.
  static std::vector<Line> order_lines(std::uint64_t seed, std::uint64_t items) {
    auto mix = [](std::uint64_t x) {
      x ^= x >> 33;
      x *= 0xFF51AFD7ED558CCDull;
      x ^= x >> 33;
      return x;
    };
    std::vector<Line> out(2 + mix(seed) % (kMaxLines - 1));
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::uint64_t h = mix(seed * 31 + k + 1);
      out[k] = {static_cast<std::int64_t>(h % items), static_cast<std::int64_t>(1 + (h >> 32) % 10)};
    }
    return out;
  }
  // TPC-C §2.4.2.2: the stock quantity after ordering qty.
  static std::int64_t restock(std::int64_t s, std::int64_t qty) { return s - qty >= 10 ? s - qty : s - qty + 91; }
  static std::int64_t initial_stock(std::uint64_t item) { return 20 + static_cast<std::int64_t>(item % 80); }

  LoggedTpcc(pmem::Pool& pool, std::string_view name, int threads, const LoggerOptions& opt,
             std::uint64_t districts = 4, std::uint64_t items = 16)
      : root_(pool.has_root(name) ? pool.root<Root>(name) : pool.create_root<Root>(name)),
        log_(pool, &root_->log, threads, opt) {
    if (root_->districts == nullptr) {
      // CRASH: a crash before the districts pointer is durable leaves it
      // null: the next attach builds the tables again (the lost ones were
      // never marked, so pool recovery freed them).
      const std::uint64_t nd = std::clamp<std::uint64_t>(districts, 1, kMaxDistricts);
      const std::uint64_t ni = std::max<std::uint64_t>(items, 1);
      auto* d = static_cast<District*>(pool.heap().alloc(nd * sizeof(District), 0));
      for (std::uint64_t i = 0; i < nd; ++i) persist::store(&d[i], District{1, nullptr});
      persist::pwb(d, nd * sizeof(District));
      auto* s = static_cast<std::int64_t*>(pool.heap().alloc(ni * sizeof(std::int64_t), 0));
      for (std::uint64_t i = 0; i < ni; ++i) persist::store(&s[i], initial_stock(i));
      persist::pwb(s, ni * sizeof(std::int64_t));
      persist::store(&root_->stock, s);
      persist::store(&root_->nd, nd);
      persist::store(&root_->ni, ni);
      persist::pwb(&root_->stock, 3 * sizeof(std::uint64_t));
      // ORDER: the tables, the stock pointer and the sizes before the
      // districts pointer that says they exist.
      persist::psync();
      persist::store(&root_->districts, d);
      persist::pwb(&root_->districts, sizeof d);
      persist::psync();
    }
  }

  std::uint64_t districts() const { return root_->nd; }
  std::uint64_t items() const { return root_->ni; }

  // New-Order for district d (modulo districts()) with the lines of `seed`;
  // returns the new order's id.
  std::int64_t new_order(int tid, std::uint64_t d, std::uint64_t seed) {
    d %= root_->nd;
    const std::vector<Line> lines = order_lines(seed, root_->ni);
    bool stripe[kStockLocks] = {};
    for (const auto& l : lines) stripe[static_cast<std::uint64_t>(l.item) % kStockLocks] = true;
    Lock* held[1 + kMaxLines] = {};
    int n = 0;
    held[n++] = &district_locks_[d];
    for (int s = 0; s < kStockLocks; ++s)
      if (stripe[s]) held[n++] = &stock_locks_[s];
    // ORDER: district lock, then stock stripes ascending: one global order.
    Region r(log_, tid, {held[0], held[1], held[2], held[3], held[4], held[5]});
    District* dist = &root_->districts[d];
    const std::int64_t o_id = dist->next_o_id;
    log_.write(tid, &dist->next_o_id, o_id + 1);
    auto* o = static_cast<Order*>(log_.alloc(tid, sizeof(Order)));
    log_.init(tid, &o->o_id, o_id);
    log_.init(tid, &o->ol_cnt, static_cast<std::uint64_t>(lines.size()));
    log_.init(tid, &o->next, dist->orders);
    for (std::size_t k = 0; k < lines.size(); ++k) log_.init(tid, &o->lines[k], lines[k]);
    log_.write(tid, &dist->orders, o);
    for (const auto& l : lines) {
      std::int64_t* s = &root_->stock[l.item];
      // CRASH: an item may repeat: this row may be stored twice in the
      // region, and only reverse-order rollback restores its first value.
      log_.write(tid, s, restock(*s, l.qty));
    }
    r.end();
    return o_id;
  }

  // The district's next order id (a read-only lookup: takes the lock
  // without logging).
  std::int64_t next_order_id(int, std::uint64_t d) {
    d %= root_->nd;
    district_locks_[d].lock_for_read();
    const std::int64_t v = root_->districts[d].next_o_id;
    district_locks_[d].unlock_for_read();
    return v;
  }

  // The abstract state: the number of districts and of items, next_o_id
  // per district, stock per item, then per district its order count and,
  // oldest first, each order's (id, lines digest). A quiescent snapshot
  // (every lock held for read).
  std::vector<std::int64_t> snapshot() {
    for (auto& l : district_locks_) l.lock_for_read();
    for (auto& l : stock_locks_) l.lock_for_read();
    std::vector<std::int64_t> out{static_cast<std::int64_t>(root_->nd), static_cast<std::int64_t>(root_->ni)};
    for (std::uint64_t d = 0; d < root_->nd; ++d) out.push_back(root_->districts[d].next_o_id);
    for (std::uint64_t i = 0; i < root_->ni; ++i) out.push_back(root_->stock[i]);
    for (std::uint64_t d = 0; d < root_->nd; ++d) {
      std::vector<const Order*> list;
      for (const Order* o = root_->districts[d].orders; o != nullptr && list.size() < (1u << 20); o = o->next)
        list.push_back(o);
      out.push_back(static_cast<std::int64_t>(list.size()));
      for (auto it = list.rbegin(); it != list.rend(); ++it) {
        out.push_back((*it)->o_id);
        const std::uint64_t cnt = std::min<std::uint64_t>((*it)->ol_cnt, kMaxLines + 1);
        out.push_back(lines_digest((*it)->lines, cnt > kMaxLines ? 0 : cnt, cnt > kMaxLines));
      }
    }
    for (auto& l : stock_locks_) l.unlock_for_read();
    for (auto& l : district_locks_) l.unlock_for_read();
    return out;
  }
  static std::int64_t lines_digest(const Line* lines, std::uint64_t n, bool malformed = false) {
    std::uint64_t h = malformed ? 0xBAD : 0x7C;
    for (std::uint64_t k = 0; k < n; ++k) {
      h = (h ^ static_cast<std::uint64_t>(lines[k].item)) * 0x100000001B3ull;
      h = (h ^ static_cast<std::uint64_t>(lines[k].qty)) * 0x100000001B3ull;
    }
    return static_cast<std::int64_t>(h >> 1);
  }
  Logger& logger() { return log_; }

  static void recover_root(pmem::Pool& pool, Root* r, const std::function<void(void*)>& mark) {
    validate_area(pool, &r->log);  // before following its pointers (issue 40)
    recover_area(&r->log);
    mark_area(&r->log, mark);
    if (r->districts == nullptr) return;
    mark(r->districts);
    mark(r->stock);
    for (std::uint64_t d = 0; d < r->nd; ++d)
      for (Order* o = r->districts[d].orders; o != nullptr; o = o->next) mark(o);
  }

 private:
  Root* root_;
  Logger log_;
  Lock district_locks_[kMaxDistricts];
  Lock stock_locks_[kStockLocks];
};

inline const bool kLoggedTpccRootRegistered = pmem::register_root_type<LoggedTpcc::Root>(&LoggedTpcc::recover_root);

}  // namespace ferrite::logging
