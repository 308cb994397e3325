// Pool files: create/open, roots, the double header, every refusal (Errc),
// backends, the volatile replica.
#include <sys/mman.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "common/pool_image.h"
#include "common/temp_pool.h"

namespace pool_test {  // this file's names, apart in a unity build

namespace {

using namespace ferrite::pmem;
using ferrite::test::TempPath;
namespace fpt = ferrite::test;
namespace fps = ferrite::persist;

struct Counter {
  static constexpr std::uint32_t kTypeTag = 0xC0C0;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Counter";
  explicit Counter(std::uint64_t v) : value(v) {}
  std::uint64_t value;
  std::uint64_t pad[3] = {};
};
struct CounterV2 {
  static constexpr std::uint32_t kTypeTag = 0xC0C0;
  static constexpr std::uint32_t kTypeVersion = 2;
  static constexpr const char* kTypeName = "test::Counter(v2)";
  std::uint64_t value = 0;
  std::uint64_t pad[3] = {};
};
struct Other {
  static constexpr std::uint32_t kTypeTag = 0x07E4;
  static constexpr std::uint32_t kTypeVersion = 1;
  static constexpr const char* kTypeName = "test::Other";
  std::uint64_t x = 0;
};
struct alignas(256) Aligned {
  static constexpr std::uint32_t kTypeTag = 0xA1;
  static constexpr std::uint32_t kTypeVersion = 1;
  char bytes[300];
};
struct Big {
  static constexpr std::uint32_t kTypeTag = 0xB16;
  static constexpr std::uint32_t kTypeVersion = 1;
  char bytes[200 * 1024];
};

constexpr std::size_t kMiB = std::size_t{1} << 20;

Errc code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const PoolError& e) {
    return e.code();
  }
  ADD_FAILURE() << "expected a PoolError";
  return Errc::kCorrupt;
}
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const PoolError& e) {
    return e.what();
  }
  return "";
}

TEST(PmemPool, CreateOpenReopen) {
  TempPath p;
  std::uintptr_t base;
  std::string uuid;
  {
    auto pool = Pool::create(p, 4 * kMiB);
    base = reinterpret_cast<std::uintptr_t>(pool->base());
    uuid = pool->uuid();
    EXPECT_EQ(pool->size(), 4 * kMiB);
    EXPECT_EQ(base % layout::kBaseAlign, 0u);
    EXPECT_EQ(pool->media(), Media::kTmpfs);
    EXPECT_EQ(pool->format_version(), 1u);
    EXPECT_EQ(uuid.size(), 36u);
    EXPECT_TRUE(pool->contains(pool->base()));
    EXPECT_TRUE(pool->contains(static_cast<char*>(pool->base()) + 4 * kMiB - 8, 8));
    EXPECT_FALSE(pool->contains(static_cast<char*>(pool->base()) + 4 * kMiB - 8, 9));
    EXPECT_FALSE(pool->contains(&base));
    EXPECT_EQ(std::string(static_cast<const char*>(pool->base()), 7), "FERRITE");
  }
  auto pool = Pool::open(p);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pool->base()), base);
  EXPECT_EQ(pool->uuid(), uuid);
  auto r = check_pool(p);
  EXPECT_TRUE(r.ok) << r.message;
}

// create reserves the whole file (a full file system fails create, not a
// later store); PoolOptions::reserve = false leaves it sparse, for pools
// much larger than what they hold (trace recordings): the file then holds
// only the pages the pool touched (its headers and heap metadata).
TEST(PmemPool, CreateReservesTheWholeFileUnlessToldNot) {
  auto allocated = [](const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::stat(path.c_str(), &st), 0);
    return static_cast<std::uint64_t>(st.st_blocks) * 512;
  };
  TempPath reserved, sparse;
  auto a = Pool::create(reserved, 64 * kMiB);
  EXPECT_GE(allocated(reserved), 64 * kMiB);
  PoolOptions o;
  o.reserve = false;
  auto b = Pool::create(sparse, 64 * kMiB, o);
  EXPECT_EQ(b->size(), 64 * kMiB);
  EXPECT_LT(allocated(sparse), 8 * kMiB);
  // Still a pool: it reopens and checks.
  b.reset();
  auto r = check_pool(sparse);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_EQ(Pool::open(sparse)->size(), 64 * kMiB);
}

TEST(PmemPool, OpenOrCreate) {
  TempPath p;
  void* base;
  {
    auto pool = Pool::open_or_create(p, 2 * kMiB);
    base = pool->base();
    pool->create_root<Counter>("c", 5);
  }
  auto pool = Pool::open_or_create(p, 2 * kMiB);
  EXPECT_EQ(pool->base(), base);
  EXPECT_EQ(pool->root<Counter>("c")->value, 5u);
}

TEST(PmemPool, RootsSurviveReopen) {
  TempPath p;
  std::uint64_t gen0;
  {
    auto pool = Pool::create(p, 4 * kMiB);
    gen0 = pool->generation();
    Counter* c = pool->create_root<Counter>("counter", 41);
    c->value++;
    fps::persist_range(&c->value, 8);
    pool->create_root<Other>("other");
    auto* a = pool->create_root<Aligned>("aligned");
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(a) % 256, 0u);
    auto* b = pool->create_root<Big>("big");
    std::memset(b->bytes, 0x5A, sizeof b->bytes);
    fps::persist_range(b->bytes, sizeof b->bytes);
    EXPECT_EQ(pool->generation(), gen0 + 4);
  }
  auto pool = Pool::open(p);
  EXPECT_EQ(pool->generation(), gen0 + 4);
  EXPECT_TRUE(pool->has_root("counter"));
  EXPECT_FALSE(pool->has_root("nope"));
  EXPECT_EQ(pool->root<Counter>("counter")->value, 42u);
  EXPECT_EQ(pool->root<Big>("big")->bytes[sizeof(Big) - 1], 0x5A);
  auto roots = pool->roots();
  ASSERT_EQ(roots.size(), 4u);
  EXPECT_EQ(roots[0].name, "counter");
  EXPECT_EQ(roots[0].type_tag, Counter::kTypeTag);
  EXPECT_EQ(roots[0].size, sizeof(Counter));
  auto rep = check_pool(p);
  ASSERT_TRUE(rep.ok) << rep.message;
  ASSERT_EQ(rep.roots.size(), 4u);
  EXPECT_EQ(rep.root_type_names[0], "test::Counter");
  EXPECT_GE(rep.chunks_used, 5u);  // small chunks + a 4-chunk run for Big
}

TEST(PmemPool, RootErrors) {
  TempPath p;
  auto pool = Pool::create(p, 2 * kMiB);
  pool->create_root<Counter>("c", 1);
  EXPECT_EQ(code_of([&] { pool->root<Other>("c"); }), Errc::kRootType);
  const std::string m = message_of([&] { pool->root<CounterV2>("c"); });
  EXPECT_NE(m.find("test::Counter (tag"), std::string::npos) << m;
  EXPECT_NE(m.find("test::Counter(v2)"), std::string::npos) << m;
  EXPECT_EQ(code_of([&] { pool->root<Counter>("d"); }), Errc::kUnknownRoot);
  EXPECT_EQ(code_of([&] { pool->create_root<Counter>("c", 2); }), Errc::kInvalidArgument);
  EXPECT_EQ(code_of([&] { pool->create_root<Counter>("", 2); }), Errc::kInvalidArgument);
  EXPECT_EQ(code_of([&] { pool->create_root<Counter>(std::string(48, 'x'), 2); }), Errc::kInvalidArgument);
  pool->create_root<Counter>(std::string(47, 'x'), 2);  // longest legal name
  for (int i = 2; i < 32; ++i) pool->create_root<Counter>("r" + std::to_string(i), i);
  EXPECT_EQ(code_of([&] { pool->create_root<Counter>("one-too-many", 0); }), Errc::kRootTableFull);
  EXPECT_EQ(pool->roots().size(), 32u);
}

struct Throws {
  static constexpr std::uint32_t kTypeTag = 0x7;
  static constexpr std::uint32_t kTypeVersion = 1;
  explicit Throws(int) { throw std::runtime_error("no"); }
};

TEST(PmemPool, ThrowingConstructorReleasesTheName) {
  TempPath p;
  auto pool = Pool::create(p, 2 * kMiB);
  EXPECT_THROW(pool->create_root<Throws>("t", 1), std::runtime_error);
  EXPECT_FALSE(pool->has_root("t"));
  pool->create_root<Counter>("t", 3);
  EXPECT_EQ(pool->root<Counter>("t")->value, 3u);
}

TEST(PmemPool, CreateRefusals) {
  TempPath p;
  EXPECT_EQ(code_of([&] { Pool::create(p, 4 * kMiB + 100); }), Errc::kInvalidArgument);
  EXPECT_EQ(code_of([&] { Pool::create(p, 512 * 1024); }), Errc::kInvalidArgument);
  PoolOptions bad;
  bad.arenas = 0;
  EXPECT_EQ(code_of([&] { Pool::create(p, 2 * kMiB, bad); }), Errc::kInvalidArgument);
  bad.arenas = 4;
  bad.base = 0x1234;
  EXPECT_EQ(code_of([&] { Pool::create(p, 2 * kMiB, bad); }), Errc::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(p.path));
  EXPECT_EQ(code_of([&] { Pool::create("/dev/shm/no-such-dir-ferrite/x.pool", 2 * kMiB); }), Errc::kNotFound);
  Pool::create(p, 2 * kMiB);
  EXPECT_EQ(code_of([&] { Pool::create(p, 2 * kMiB); }), Errc::kExists);
  // No leftover temporary files from create.
  for (auto& e : std::filesystem::directory_iterator("/dev/shm"))
    EXPECT_EQ(e.path().string().find(p.path + ".creating"), std::string::npos);
}

TEST(PmemPool, OpenRefusalsBasic) {
  EXPECT_EQ(code_of([] { Pool::open("/dev/shm/ferrite-definitely-missing.pool"); }), Errc::kNotFound);
  EXPECT_EQ(code_of([] { Pool::open("/dev/shm"); }), Errc::kUnreadable);
  TempPath p;
  fpt::write_file(p, std::vector<char>(100, 'x'));
  EXPECT_EQ(code_of([&] { Pool::open(p); }), Errc::kTruncated);
  fpt::write_file(p, std::vector<char>(2 * kMiB, 'x'));
  EXPECT_EQ(code_of([&] { Pool::open(p); }), Errc::kBadMagic);
  const std::string m = message_of([&] { Pool::open(p); });
  EXPECT_NE(m.find(p.path), std::string::npos) << "message names the file: " << m;
}

// Makes a pool with a root, returns its image.
std::vector<char> sample_image(const std::string& path) {
  {
    auto pool = Pool::create(path, 2 * kMiB);
    pool->create_root<Counter>("c", 7);
  }
  return fpt::read_file(path);
}

TEST(PmemPool, OpenRefusalsFromDamagedHeaders) {
  TempPath p;
  const auto good = sample_image(p);
  auto img = good;
  auto with = [&](auto mutate) {
    img = good;
    mutate();
    fpt::write_file(p, img);
    const Errc c = code_of([&] { Pool::open(p); });
    const auto rep = check_pool(p);
    EXPECT_FALSE(rep.ok);
    EXPECT_EQ(rep.error, c) << rep.message;
    return c;
  };
  EXPECT_EQ(with([&] { img[0] = 'X'; img[8192] = 'X'; }), Errc::kBadMagic);
  EXPECT_EQ(with([&] {
              fpt::slot_of(img, 0)->format_version = 2;
              fpt::slot_of(img, 1)->format_version = 7;
            }),
            Errc::kBadVersion);
  EXPECT_EQ(with([&] { img[200] ^= 1; img[8192 + 200] ^= 1; }), Errc::kChecksum);
  EXPECT_EQ(with([&] { img.resize(img.size() - 4096); }), Errc::kTruncated);
  EXPECT_EQ(with([&] { img.resize(12 * 1024); }), Errc::kTruncated);
  EXPECT_EQ(with([&] { img.resize(img.size() + 4096); }), Errc::kCorrupt);
  auto both = [&](auto f) {
    for (int s = 0; s < 2; ++s) {
      f(fpt::slot_of(img, s));
      fpt::reseal(fpt::slot_of(img, s));
    }
  };
  EXPECT_EQ(with([&] { both([](layout::HeaderSlot* h) { h->base += 4096; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { both([](layout::HeaderSlot* h) { h->base = std::uint64_t{1} << 47; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { both([](layout::HeaderSlot* h) { h->chunk_count += 1; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { both([](layout::HeaderSlot* h) { h->chunk_size = 4096; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { both([](layout::HeaderSlot* h) { h->pool_size = 1 << 20; }); }), Errc::kCorrupt);
  // Root entries: both slots hold the root (at rest the two agree), and
  // both are damaged alike, so the slot in force is the damaged one.
  auto root0 = [&](auto f) {
    both([&](layout::HeaderSlot* h) { f(h->roots[0]); });
  };
  EXPECT_EQ(with([&] { root0([](layout::RootEntry& r) { std::memset(r.name, 'a', sizeof r.name); }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { root0([](layout::RootEntry& r) { r.offset = 100; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { root0([](layout::RootEntry& r) { r.offset += 8; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { root0([](layout::RootEntry& r) { r.size = 1 << 30; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { root0([](layout::RootEntry& r) { r.in_use = 2; }); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { both([](layout::HeaderSlot* h) { h->roots[1] = h->roots[0]; }); }), Errc::kCorrupt);
  // Two verifying slots of one generation that differ: refused, not guessed.
  EXPECT_EQ(with([&] {
              auto* h = fpt::slot_of(img, 1);
              h->roots[0].type_version += 1;
              fpt::reseal(h);
            }),
            Errc::kCorrupt);
  // Chunk map: an unknown entry; a run past the end; the root's chunk freed.
  auto* map = reinterpret_cast<std::uint32_t*>(img.data() + layout::kChunkMapOffset);
  EXPECT_EQ(with([&] { map[3] = 0x77; }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { map[5] = layout::large_head_entry(1000); }), Errc::kCorrupt);
  EXPECT_EQ(with([&] { map[0] = 0; }), Errc::kCorrupt);
  // Orphan run tails (an interrupted run allocation) are fine.
  img = good;
  map = reinterpret_cast<std::uint32_t*>(img.data() + layout::kChunkMapOffset);
  map[9] = layout::kLargeTail;
  fpt::write_file(p, img);
  EXPECT_TRUE(check_pool(p).ok);
  { auto pool = Pool::open(p); }
}

// docs/pool-format.md "The double header": each state open distinguishes,
// built as the crash or the damage leaves it, then what check says, what
// open reports and repairs, and that nothing acknowledged is lost.
namespace {
// A pool with root "a", at rest (both slots at one generation).
std::vector<char> at_rest(const std::string& p, std::uint64_t* gen) {
  {
    auto pool = Pool::create(p, 2 * kMiB);
    pool->create_root<Counter>("a", 1);
  }
  auto img = fpt::read_file(p);
  *gen = fpt::slot_of(img, 0)->generation;
  EXPECT_EQ(fpt::slot_of(img, 1)->generation, *gen) << "at rest both slots hold one generation";
  EXPECT_EQ(std::memcmp(fpt::slot_of(img, 0), fpt::slot_of(img, 1), sizeof(layout::HeaderSlot)), 0);
  return img;
}
// After open repaired the file: both slots agree again and check is clean.
void expect_healed(const std::string& p, std::uint64_t gen) {
  auto img = fpt::read_file(p);
  EXPECT_EQ(fpt::slot_of(img, 0)->generation, gen);
  EXPECT_EQ(std::memcmp(fpt::slot_of(img, 0), fpt::slot_of(img, 1), sizeof(layout::HeaderSlot)), 0)
      << "open did not bring the other slot up to date";
  const auto rep = check_pool(p);
  ASSERT_TRUE(rep.ok) << rep.message;
  EXPECT_EQ(rep.header.state, HeaderState::kInSync) << rep.header.message;
}
}  // namespace

TEST(PmemPool, AByteFlippedInEitherHeaderSlotAtRestIsRepairedFromItsTwin) {
  for (int damaged = 0; damaged < 2; ++damaged) {
    for (const std::size_t at : {std::size_t{48} /* generation */, std::size_t{128} /* root 'a' name */, std::size_t{5000}}) {
      SCOPED_TRACE("slot " + std::to_string(damaged) + " byte " + std::to_string(at));
      TempPath p;
      std::uint64_t gen;
      auto img = at_rest(p, &gen);
      img[layout::kSlotOffset[damaged] + at] ^= (at == 48 ? 0x01 : 0x40);  // generation: one lower or one higher
      fpt::write_file(p, img);
      const auto rep = check_pool(p);
      ASSERT_TRUE(rep.ok) << rep.message;
      EXPECT_EQ(rep.header_slot, 1 - damaged);
      EXPECT_EQ(rep.generation, gen) << "a slot damaged at rest must never roll the pool back";
      const bool gen_reads_newer = at == 48 && ((gen ^ 1) > gen);
      EXPECT_EQ(rep.header.state, gen_reads_newer ? HeaderState::kFellBack : HeaderState::kRepaired);
      EXPECT_NE(rep.header.message.find("slot " + std::to_string(damaged)), std::string::npos) << rep.header.message;
      {
        auto pool = Pool::open(p);
        EXPECT_EQ(pool->header_health().state, rep.header.state);
        ASSERT_NE(pool->recovery_report(), nullptr);
        EXPECT_EQ(pool->recovery_report()->header.state, rep.header.state);
        EXPECT_EQ(pool->root<Counter>("a")->value, 1u) << "the root created last survived";
      }
      expect_healed(p, gen);
    }
  }
}

TEST(PmemPool, ATornUpdateBeforeItsCommitFallsBackAndSaysWhichRootsDiffer) {
  TempPath p;
  std::uint64_t gen;
  auto img = at_rest(p, &gen);
  // A crash while publishing root "b": step 1 wrote generation gen+1 with
  // "b" over slot 1, half of it landed.
  auto* s1 = fpt::slot_of(img, 1);
  s1->generation = gen + 1;
  s1->roots[1] = s1->roots[0];
  std::memcpy(s1->roots[1].name, "b\0", 2);
  fpt::reseal(s1);
  std::memset(img.data() + layout::kSlotOffset[1] + 4096, 0xEE, 4096);
  fpt::write_file(p, img);
  const auto rep = check_pool(p);
  ASSERT_TRUE(rep.ok) << rep.message;
  EXPECT_EQ(rep.generation, gen);
  EXPECT_FALSE(rep.other_slot_valid);
  EXPECT_EQ(rep.header.state, HeaderState::kFellBack);
  EXPECT_EQ(rep.header.other_generation, gen + 1);
  EXPECT_EQ(rep.header.roots_only_in_other, std::vector<std::string>{"b"});
  EXPECT_TRUE(rep.header.roots_only_in_force.empty());
  EXPECT_NE(rep.header.message.find("falls back to generation " + std::to_string(gen)), std::string::npos)
      << rep.header.message;
  EXPECT_NE(rep.header.message.find("'b'"), std::string::npos) << rep.header.message;
  {
    auto pool = Pool::open(p);
    EXPECT_FALSE(pool->has_root("b"));  // never published: its create_root never returned
    EXPECT_EQ(pool->recovery_report()->header.state, HeaderState::kFellBack);
    EXPECT_EQ(pool->root<Counter>("a")->value, 1u);
    pool->create_root<Counter>("c", 3);
    EXPECT_EQ(pool->generation(), gen + 1);
  }
  expect_healed(p, gen + 1);
  auto pool = Pool::open(p);
  EXPECT_EQ(pool->header_health().state, HeaderState::kInSync);
  EXPECT_EQ(pool->root<Counter>("c")->value, 3u);
}

TEST(PmemPool, ACrashAfterTheCommitPointIsCompletedAtOpen) {
  TempPath p;
  {
    auto pool = Pool::create(p, 2 * kMiB);
    pool->create_root<Counter>("a", 1);
    pool->create_root<Counter>("b", 2);
  }
  auto img = fpt::read_file(p);
  const std::uint64_t gen = fpt::slot_of(img, 1)->generation;
  // Publishing "b": step 1 is durable (slot 1 at gen, with "b"), step 2
  // never landed — slot 0 still holds generation gen-1, without "b". (Also
  // the state at rest of a pool written before the two-copy rule.)
  auto* s0 = fpt::slot_of(img, 0);
  s0->generation = gen - 1;
  for (auto& r : s0->roots)
    if (r.in_use && std::string(r.name) == "b") std::memset(&r, 0, sizeof r);
  fpt::reseal(s0);
  fpt::write_file(p, img);
  const auto rep = check_pool(p);
  ASSERT_TRUE(rep.ok) << rep.message;
  EXPECT_EQ(rep.header_slot, 1);
  EXPECT_EQ(rep.header.state, HeaderState::kCompleted);
  EXPECT_EQ(rep.header.other_generation, gen - 1);
  EXPECT_TRUE(rep.other_slot_valid);
  {
    auto pool = Pool::open(p);
    EXPECT_EQ(pool->header_health().state, HeaderState::kCompleted);
    EXPECT_EQ(pool->root<Counter>("b")->value, 2u) << "a committed root survives";
  }
  expect_healed(p, gen);
}

TEST(PmemPool, BaseUnavailable) {
  TempPath p;
  std::uintptr_t base;
  {
    auto pool = Pool::create(p, 2 * kMiB);
    base = reinterpret_cast<std::uintptr_t>(pool->base());
  }
  void* blocker = ::mmap(reinterpret_cast<void*>(base + 4096), 4096, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(blocker, reinterpret_cast<void*>(base + 4096));
  EXPECT_EQ(code_of([&] { Pool::open(p); }), Errc::kBaseUnavailable);
  PoolOptions o;
  o.base = base;
  TempPath p2;
  EXPECT_EQ(code_of([&] { Pool::create(p2, 2 * kMiB, o); }), Errc::kBaseUnavailable);
  EXPECT_FALSE(std::filesystem::exists(p2.path));
  // Without an explicit base, create picks the next free slot.
  auto other = Pool::create(p2, 2 * kMiB);
  EXPECT_NE(reinterpret_cast<std::uintptr_t>(other->base()), base);
  ::munmap(blocker, 4096);
  auto pool = Pool::open(p);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(pool->base()), base);
}

TEST(PmemPool, LockedInTheSameProcess) {
  TempPath p;
  auto pool = Pool::create(p, 2 * kMiB);
  // flock is per open file description: a second open in this process fails too.
  EXPECT_EQ(code_of([&] { Pool::open(p); }), Errc::kLocked);
  EXPECT_TRUE(check_pool(p).ok);  // read-only check does not need the lock
}

TEST(PmemPool, BackendIsInstalledAndRestored) {
  const fps::Backend* before = fps::installed();
  TempPath p1, p2, p3;
  PoolOptions off;
  ASSERT_TRUE(fps::parse_backend("off", &off.backend));
  {
    auto a = Pool::create(p1, 2 * kMiB, off);
    EXPECT_STREQ(fps::installed()->name, "off");
    auto b = Pool::create(p2, 2 * kMiB, off);  // same config: fine
    EXPECT_EQ(code_of([&] { Pool::create(p3, 2 * kMiB); }), Errc::kBackendConflict);
    EXPECT_FALSE(std::filesystem::exists(p3.path));
    a.reset();
    EXPECT_STREQ(fps::installed()->name, "off");  // b still open
  }
  EXPECT_EQ(fps::installed(), before);
  auto c = Pool::open(p1);  // hardware now that no "off" pool is open
  EXPECT_EQ(c->backend().kind, fps::BackendConfig::Kind::kHardware);
}

// A stand-in simulator: counts attach/detach and hands out a no-op table.
struct FakeSim {
  static inline int attached = 0, detached = 0;
  static inline void* last_base = nullptr;
  static inline std::size_t last_size = 0;
  static void nop() {}
  static void line(const void*) {}
  static inline const fps::Backend table{"fake-sim", &line, &nop, &nop, &nop, &nop, &nop, &nop, &nop, nullptr};
  static const fps::Backend* attach(void* b, std::size_t s) {
    ++attached;
    last_base = b;
    last_size = s;
    return &table;
  }
  static void detach(void* b) {
    ++detached;
    EXPECT_EQ(b, last_base);
  }
};

TEST(PmemPool, SimBackendAttachesThePoolRange) {
  fps::set_sim_hooks({&FakeSim::attach, &FakeSim::detach});
  const fps::Backend* before = fps::installed();
  TempPath p;
  PoolOptions sim;
  ASSERT_TRUE(fps::parse_backend("sim", &sim.backend));
  {
    auto pool = Pool::create(p, 2 * kMiB, sim);
    EXPECT_EQ(FakeSim::attached, 1);
    EXPECT_EQ(FakeSim::last_base, pool->base());
    EXPECT_EQ(FakeSim::last_size, pool->size());
    EXPECT_EQ(fps::installed(), &FakeSim::table);
  }
  EXPECT_EQ(FakeSim::detached, 1);
  EXPECT_EQ(fps::installed(), before);
  fps::set_sim_hooks({nullptr, nullptr});
  EXPECT_EQ(code_of([&] { Pool::open(p, sim); }), Errc::kInvalidArgument);  // no simulator
  auto pool = Pool::open(p);  // the failed open released everything
}

TEST(PmemPool, VolatileReplica) {
  TempPath p;
  std::uintptr_t at;
  {
    auto pool = Pool::create(p, 2 * kMiB);
    EXPECT_EQ(pool->replica(), nullptr);
    auto* r = static_cast<char*>(pool->map_volatile_replica());
    at = reinterpret_cast<std::uintptr_t>(r);
    EXPECT_EQ(at, reinterpret_cast<std::uintptr_t>(pool->base()) + kReplicaOffset);
    EXPECT_EQ(pool->map_volatile_replica(), r);  // idempotent
    EXPECT_EQ(r[12345], 0);
    r[2 * kMiB - 1] = 9;
    auto* c = pool->create_root<Counter>("c", 1);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(Pool::replica_of(c)), reinterpret_cast<std::uintptr_t>(c) + kReplicaOffset);
  }
  // Unmapped at close: the range is free again.
  void* probe = ::mmap(reinterpret_cast<void*>(at), 4096, PROT_READ,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  EXPECT_EQ(probe, reinterpret_cast<void*>(at));
  auto pool = Pool::open(p);
  EXPECT_EQ(code_of([&] { pool->map_volatile_replica(); }), Errc::kBaseUnavailable);
  ::munmap(probe, 4096);
  EXPECT_NE(pool->map_volatile_replica(), nullptr);
}

TEST(PmemPool, HeaderWritesArePersisted) {
  TempPath p;
  auto pool = Pool::create(p, 2 * kMiB);
  fps::reset_counters();
  pool->create_root<Counter>("c", 1);
  const auto c = fps::thread_counters();
  // One 8 KiB header slot = 128 lines, plus the root object and the chunk map entry.
  EXPECT_GE(c[fps::Verb::kPwb], 128u + 1u + 1u);
  EXPECT_GE(c[fps::Verb::kPsync], 1u);
}

}  // namespace

}  // namespace pool_test
