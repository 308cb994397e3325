// src/baselines/pmdk_tx.cc — pmdk-tx (include/ferrite/baselines/pmdk_tx.h).
// The only Ferrite code that persists through something other than
// persist/: PMDK does its own flushing inside its transactions.
#include "ferrite/baselines/pmdk_tx.h"

#include <libpmemobj.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace ferrite::baselines {

namespace {

struct Node {
  PMEMoid next;
  std::int64_t value;
  // payload follows
};

struct Root {
  PMEMoid top;         // stack
  PMEMoid head, tail;  // queue (no sentinel; both null when empty)
  double value;        // float
  std::uint64_t size;  // heap
  std::uint64_t capacity;
  PMEMoid keys;        // heap: capacity int64 keys
  std::uint64_t initialized;
};

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string("pmdk-tx: ") + what + ": " + pmemobj_errormsg());
}

std::atomic<int> g_counter{0};

}  // namespace

struct PmdkTx::Impl {
  Kind kind;
  std::size_t node_size;
  std::string path;
  PMEMobjpool* pop = nullptr;
  Root* root = nullptr;
  std::mutex mu;

  // Runs f inside one transaction; f returns normally to commit.
  template <class F>
  void tx(F&& f) {
    if (pmemobj_tx_begin(pop, nullptr, TX_PARAM_NONE) != 0) fail("pmemobj_tx_begin");
    try {
      f();
    } catch (...) {
      if (pmemobj_tx_stage() == TX_STAGE_WORK) pmemobj_tx_abort(ECANCELED);
      pmemobj_tx_end();
      throw;
    }
    if (pmemobj_tx_stage() == TX_STAGE_WORK) pmemobj_tx_commit();
    const int err = pmemobj_tx_end();
    if (err != 0) fail("transaction aborted");
  }
  void add(void* p, std::size_t n) {
    if (pmemobj_tx_add_range_direct(p, n) != 0) fail("pmemobj_tx_add_range_direct");
  }
  PMEMoid alloc_node(std::int64_t v) {
    PMEMoid oid = pmemobj_tx_alloc(node_size, 1);
    if (OID_IS_NULL(oid)) fail("pmemobj_tx_alloc");
    auto* n = static_cast<Node*>(pmemobj_direct(oid));
    n->next = OID_NULL;
    n->value = v;
    if (node_size > sizeof(Node))
      std::memset(reinterpret_cast<char*>(n) + sizeof(Node), static_cast<int>(v & 0xff), node_size - sizeof(Node));
    return oid;
  }
  static Node* node(PMEMoid oid) { return static_cast<Node*>(pmemobj_direct(oid)); }
};

PmdkTx::PmdkTx(const std::string& dir, Kind kind, std::size_t value_size, int heap_capacity, std::size_t pool_size)
    : impl_(std::make_unique<Impl>()) {
  if (value_size < 8) throw std::invalid_argument("pmdk-tx: value_size must be >= 8");
  if (kind == Kind::kHeap && heap_capacity <= 0) throw std::invalid_argument("pmdk-tx: heap capacity must be > 0");
  Impl& im = *impl_;
  im.kind = kind;
  im.node_size = sizeof(Node) + (value_size - 8);
  im.path = dir + "/ferrite-pmdk-" + std::to_string(::getpid()) + "-" + std::to_string(g_counter.fetch_add(1)) + ".pool";
  std::filesystem::remove(im.path);
  im.pop = pmemobj_create(im.path.c_str(), "ferrite-pmdk-tx", std::max<std::size_t>(pool_size, PMEMOBJ_MIN_POOL), 0600);
  if (im.pop == nullptr) fail(("pmemobj_create " + im.path).c_str());
  PMEMoid r = pmemobj_root(im.pop, sizeof(Root));
  if (OID_IS_NULL(r)) {
    pmemobj_close(im.pop);
    std::filesystem::remove(im.path);
    fail("pmemobj_root");
  }
  im.root = static_cast<Root*>(pmemobj_direct(r));
  try {
    im.tx([&] {
      im.add(im.root, sizeof(Root));
      im.root->value = 1.0;
      if (kind == Kind::kHeap) {
        im.root->capacity = static_cast<std::uint64_t>(heap_capacity);
        im.root->keys = pmemobj_tx_zalloc(sizeof(std::int64_t) * static_cast<std::size_t>(heap_capacity), 2);
        if (OID_IS_NULL(im.root->keys)) fail("pmemobj_tx_zalloc");
      }
      im.root->initialized = 1;
    });
  } catch (...) {
    pmemobj_close(im.pop);
    std::filesystem::remove(im.path);
    throw;
  }
}

PmdkTx::~PmdkTx() {
  if (impl_ && impl_->pop != nullptr) {
    pmemobj_close(impl_->pop);
    std::error_code ec;
    std::filesystem::remove(impl_->path, ec);
  }
}

const std::string& PmdkTx::path() const { return impl_->path; }

bool PmdkTx::apply(bool insert, std::int64_t arg, std::int64_t* out) {
  Impl& im = *impl_;
  Root* r = im.root;
  std::lock_guard<std::mutex> g(im.mu);
  bool has = false;
  switch (im.kind) {
    case Kind::kStack:
      if (insert) {
        im.tx([&] {
          PMEMoid n = im.alloc_node(arg);
          Impl::node(n)->next = r->top;
          im.add(&r->top, sizeof(PMEMoid));
          r->top = n;
        });
      } else {
        if (OID_IS_NULL(r->top)) return false;
        im.tx([&] {
          PMEMoid old = r->top;
          *out = Impl::node(old)->value;
          im.add(&r->top, sizeof(PMEMoid));
          r->top = Impl::node(old)->next;
          if (pmemobj_tx_free(old) != 0) fail("pmemobj_tx_free");
        });
        has = true;
      }
      break;
    case Kind::kQueue:
      if (insert) {
        im.tx([&] {
          PMEMoid n = im.alloc_node(arg);
          im.add(&r->head, 2 * sizeof(PMEMoid));
          if (OID_IS_NULL(r->tail)) {
            r->head = n;
          } else {
            Node* t = Impl::node(r->tail);
            im.add(&t->next, sizeof(PMEMoid));
            t->next = n;
          }
          r->tail = n;
        });
      } else {
        if (OID_IS_NULL(r->head)) return false;
        im.tx([&] {
          PMEMoid old = r->head;
          *out = Impl::node(old)->value;
          im.add(&r->head, 2 * sizeof(PMEMoid));
          r->head = Impl::node(old)->next;
          if (OID_IS_NULL(r->head)) r->tail = OID_NULL;
          if (pmemobj_tx_free(old) != 0) fail("pmemobj_tx_free");
        });
        has = true;
      }
      break;
    case Kind::kFloat:
      *out = std::bit_cast<std::int64_t>(r->value);
      if (insert) {
        im.tx([&] {
          im.add(&r->value, sizeof(double));
          r->value = r->value * std::bit_cast<double>(arg);
        });
      }
      has = true;
      break;
    case Kind::kHeap: {
      auto* k = static_cast<std::int64_t*>(pmemobj_direct(r->keys));
      if (insert) {
        if (r->size == r->capacity) return false;
        im.tx([&] {
          std::uint64_t pos = r->size;
          im.add(&r->size, sizeof(r->size));
          while (pos > 0 && k[(pos - 1) / 2] > arg) {
            im.add(&k[pos], sizeof(std::int64_t));
            k[pos] = k[(pos - 1) / 2];
            pos = (pos - 1) / 2;
          }
          im.add(&k[pos], sizeof(std::int64_t));
          k[pos] = arg;
          r->size = r->size + 1;
        });
      } else {
        if (r->size == 0) return false;
        im.tx([&] {
          *out = k[0];
          const std::uint64_t ns = r->size - 1;
          const std::int64_t last = k[ns];
          im.add(&r->size, sizeof(r->size));
          std::uint64_t pos = 0;
          for (;;) {
            std::uint64_t c = 2 * pos + 1;
            if (c >= ns) break;
            if (c + 1 < ns && k[c + 1] < k[c]) ++c;
            if (k[c] >= last) break;
            im.add(&k[pos], sizeof(std::int64_t));
            k[pos] = k[c];
            pos = c;
          }
          if (ns > 0) {
            im.add(&k[pos], sizeof(std::int64_t));
            k[pos] = last;
          }
          r->size = ns;
        });
        has = true;
      }
      break;
    }
  }
  return has;
}

std::vector<std::int64_t> PmdkTx::snapshot() {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> g(im.mu);
  Root* r = im.root;
  std::vector<std::int64_t> v;
  switch (im.kind) {
    case Kind::kStack:
      for (PMEMoid n = r->top; !OID_IS_NULL(n); n = Impl::node(n)->next) v.push_back(Impl::node(n)->value);
      break;
    case Kind::kQueue:
      for (PMEMoid n = r->head; !OID_IS_NULL(n); n = Impl::node(n)->next) v.push_back(Impl::node(n)->value);
      break;
    case Kind::kFloat:
      v.push_back(std::bit_cast<std::int64_t>(r->value));
      break;
    case Kind::kHeap: {
      auto* k = static_cast<std::int64_t*>(pmemobj_direct(r->keys));
      v.assign(k, k + r->size);
      std::sort(v.begin(), v.end());
      break;
    }
  }
  return v;
}

std::string pmdk_version() {
  return "libpmemobj " + std::to_string(PMEMOBJ_MAJOR_VERSION) + "." + std::to_string(PMEMOBJ_MINOR_VERSION);
}

}  // namespace ferrite::baselines
