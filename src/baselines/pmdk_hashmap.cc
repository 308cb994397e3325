// src/baselines/pmdk_hashmap.cc — pmdk-hashmap
// (include/ferrite/baselines/pmdk_hashmap.h). Persists through PMDK's
// transactions, not through persist/ (PMDK flushes itself).
#include "ferrite/baselines/pmdk_hashmap.h"

#include <libpmemobj.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <stdexcept>

namespace ferrite::baselines {

namespace {

// On-media layout (in the pmemobj pool). Version 1.
struct HNode {
  PMEMoid next;
  std::int64_t key;
  std::int64_t value;
};
static_assert(sizeof(HNode) == 32);
static_assert(offsetof(HNode, next) == 0);
static_assert(offsetof(HNode, key) == 16);
static_assert(offsetof(HNode, value) == 24);

struct HRoot {
  PMEMoid buckets;  // n_buckets PMEMoids
  std::uint64_t n_buckets;
  std::uint64_t layout_version;  // 1 once initialized
};
static_assert(sizeof(HRoot) == 32);
static_assert(offsetof(HRoot, buckets) == 0);
static_assert(offsetof(HRoot, n_buckets) == 16);
static_assert(offsetof(HRoot, layout_version) == 24);

constexpr std::uint64_t kLayoutVersion = 1;

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string("pmdk-hashmap: ") + what + ": " + pmemobj_errormsg());
}

std::atomic<int> g_counter{0};

HNode* node(PMEMoid oid) { return static_cast<HNode*>(pmemobj_direct(oid)); }

}  // namespace

struct PmdkHashMap::Impl {
  std::string path;
  PMEMobjpool* pop = nullptr;
  HRoot* root = nullptr;
  PMEMoid* heads = nullptr;
  std::uint64_t n = 1;
  std::array<std::mutex, kStripes> stripes;

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
    if (pmemobj_tx_end() != 0) fail("transaction aborted");
  }
  static void add(void* p, std::size_t size) {
    if (pmemobj_tx_add_range_direct(p, size) != 0) fail("pmemobj_tx_add_range_direct");
  }

  std::uint64_t bucket(std::int64_t key) const {
    auto x = static_cast<std::uint64_t>(key);  // splitmix64's finalizer, as the other hash maps
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x % n;
  }
  std::mutex& lock_of(std::uint64_t b) { return stripes[b % kStripes]; }

  // The link (bucket head or a node's next) whose target holds key, or the
  // chain's last link (null target). Caller holds the stripe.
  PMEMoid* find(std::uint64_t b, std::int64_t key) {
    PMEMoid* link = &heads[b];
    while (!OID_IS_NULL(*link) && node(*link)->key != key) link = &node(*link)->next;
    return link;
  }
  void link_new(std::uint64_t b, std::int64_t key, std::int64_t value) {
    tx([&] {
      PMEMoid oid = pmemobj_tx_alloc(sizeof(HNode), 1);
      if (OID_IS_NULL(oid)) fail("pmemobj_tx_alloc");
      HNode* nn = node(oid);  // fresh in this transaction: no undo needed
      nn->next = heads[b];
      nn->key = key;
      nn->value = value;
      add(&heads[b], sizeof(PMEMoid));
      heads[b] = oid;
    });
  }
  std::int64_t unlink(PMEMoid* link) {
    const PMEMoid victim = *link;
    const std::int64_t v = node(victim)->value;
    tx([&] {
      add(link, sizeof(PMEMoid));
      *link = node(victim)->next;
      if (pmemobj_tx_free(victim) != 0) fail("pmemobj_tx_free");
    });
    return v;
  }
};

PmdkHashMap::PmdkHashMap(const std::string& dir, std::uint64_t buckets, std::size_t pool_size)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.n = buckets == 0 ? 1 : buckets;
  // Buckets, plus ~ 2 nodes per bucket with PMDK's per-object header, plus slack.
  if (pool_size == 0) pool_size = static_cast<std::size_t>(im.n) * (16 + 2 * 128) + (std::size_t{64} << 20);
  im.path = dir + "/ferrite-pmdk-hashmap-" + std::to_string(::getpid()) + "-" +
            std::to_string(g_counter.fetch_add(1)) + ".pool";
  std::filesystem::remove(im.path);
  im.pop = pmemobj_create(im.path.c_str(), "ferrite-pmdk-hashmap", std::max<std::size_t>(pool_size, PMEMOBJ_MIN_POOL),
                          0600);
  if (im.pop == nullptr) fail(("pmemobj_create " + im.path).c_str());
  auto cleanup = [&] {
    pmemobj_close(im.pop);
    std::filesystem::remove(im.path);
  };
  PMEMoid r = pmemobj_root(im.pop, sizeof(HRoot));
  if (OID_IS_NULL(r)) {
    cleanup();
    fail("pmemobj_root");
  }
  im.root = static_cast<HRoot*>(pmemobj_direct(r));
  try {
    im.tx([&] {
      Impl::add(im.root, sizeof(HRoot));
      im.root->buckets = pmemobj_tx_zalloc(sizeof(PMEMoid) * im.n, 2);
      if (OID_IS_NULL(im.root->buckets)) fail("pmemobj_tx_zalloc (buckets)");
      im.root->n_buckets = im.n;
      im.root->layout_version = kLayoutVersion;
    });
  } catch (...) {
    cleanup();
    throw;
  }
  im.heads = static_cast<PMEMoid*>(pmemobj_direct(im.root->buckets));
}

PmdkHashMap::~PmdkHashMap() {
  if (impl_ && impl_->pop != nullptr) {
    pmemobj_close(impl_->pop);
    std::error_code ec;
    std::filesystem::remove(impl_->path, ec);
  }
}

const std::string& PmdkHashMap::path() const { return impl_->path; }

bool PmdkHashMap::insert(std::int64_t key) {
  Impl& im = *impl_;
  const auto b = im.bucket(key);
  std::lock_guard g(im.lock_of(b));
  if (!OID_IS_NULL(*im.find(b, key))) return false;  // present: no transaction
  im.link_new(b, key, 0);
  return true;
}

std::optional<std::int64_t> PmdkHashMap::put(std::int64_t key, std::int64_t value) {
  Impl& im = *impl_;
  const auto b = im.bucket(key);
  std::lock_guard g(im.lock_of(b));
  PMEMoid* link = im.find(b, key);
  if (!OID_IS_NULL(*link)) {
    HNode* n = node(*link);
    const std::int64_t old = n->value;
    im.tx([&] {
      Impl::add(&n->value, sizeof n->value);
      n->value = value;
    });
    return old;
  }
  im.link_new(b, key, value);
  return std::nullopt;
}

std::optional<std::int64_t> PmdkHashMap::get(std::int64_t key) {
  Impl& im = *impl_;
  const auto b = im.bucket(key);
  std::lock_guard g(im.lock_of(b));
  PMEMoid* link = im.find(b, key);
  if (OID_IS_NULL(*link)) return std::nullopt;
  return node(*link)->value;
}

std::optional<std::int64_t> PmdkHashMap::erase(std::int64_t key) {
  Impl& im = *impl_;
  const auto b = im.bucket(key);
  std::lock_guard g(im.lock_of(b));
  PMEMoid* link = im.find(b, key);
  if (OID_IS_NULL(*link)) return std::nullopt;
  return im.unlink(link);
}

bool PmdkHashMap::remove(std::int64_t key) { return erase(key).has_value(); }
bool PmdkHashMap::contains(std::int64_t key) { return get(key).has_value(); }

std::vector<std::pair<std::int64_t, std::int64_t>> PmdkHashMap::items() {
  Impl& im = *impl_;
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::uint64_t b = 0; b < im.n; ++b)
    for (PMEMoid o = im.heads[b]; !OID_IS_NULL(o); o = node(o)->next) out.emplace_back(node(o)->key, node(o)->value);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ferrite::baselines
