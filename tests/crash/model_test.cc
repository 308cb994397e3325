// Unit tests of the persistency models (crash/model.h): the flag example,
// same-line order, tearing only at declared multi-word stores, pfence on
// x86, the states abstract allows and x86 forbids, exhaustive enumeration
// with exact counts, image numbering (images_for / image_at) and the
// CrashState encoding.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>
#include <tuple>

#include "ferrite/crash/model.h"
#include "ferrite/crash/sim.h"
#include "common/sim_range.h"
#include "ferrite/persist/persist.h"

namespace model_test {  // this file's names, apart in a unity build

namespace fc = ferrite::crash;
namespace fp = ferrite::persist;

namespace {

using ferrite::test::SimRange;

fc::ImageOptions options(bool tearing, std::uint64_t enumerate_max = 64) {
  fc::ImageOptions o;
  o.tearing = tearing;
  o.enumerate_max = enumerate_max;
  return o;
}

fc::Line line_of(std::initializer_list<std::uint64_t> words) {
  fc::Line l{};
  int w = 0;
  for (auto v : words) std::memcpy(l.data() + 8 * w++, &v, 8);
  return l;
}

TEST(Models, Registry) {
  EXPECT_EQ(fc::model_names(), (std::vector<std::string>{"abstract", "hops", "hops+", "strand", "x86"}));
  EXPECT_EQ(fc::writeback_model_names(), (std::vector<std::string>{"abstract", "x86"}));
  EXPECT_EQ(fc::store_model_names(), (std::vector<std::string>{"hops", "hops+", "strand"}));
  for (const auto& m : fc::model_names()) {
    const bool wb = m == "abstract" || m == "x86";
    EXPECT_NE(fc::find_model(m), nullptr) << m;
    EXPECT_EQ(fc::find_model(m)->rules().empty(), wb) << m << ": only the store models name rules";
    EXPECT_EQ(fc::find_model(m)->pfence_durable(), m == "x86") << m;
  }
  ASSERT_NE(fc::find_model("x86"), nullptr);
  EXPECT_EQ(fc::find_model("x86")->name(), "x86");
  EXPECT_EQ(fc::find_model("tso"), nullptr);
  EXPECT_THROW(fc::sim::set_model("tso"), std::invalid_argument);
  EXPECT_EQ(fc::sim::model(), "abstract");
  fc::sim::set_model("x86");
  EXPECT_EQ(fc::sim::model(), "x86");
  fc::sim::set_model("abstract");
  fc::CrashState cs;
  cs.model = "nope";
  EXPECT_THROW(fc::images_for(cs, 1, 1), std::invalid_argument);
}

// The flag example. T1: A <- 1; pwb(A); pfence; flag <- 1. T2 reads
// flag == 1, then B <- 1; pwb(B); psync. "B durable, A lost" is impossible
// on x86 (the sfence made A durable before the flag store) and allowed by
// the abstract model (pfence only orders T1's write-backs).
std::set<std::pair<int, int>> flag_example(std::string_view model, bool* exhaustive) {
  SimRange r(model);
  std::thread t1([&] {
    r.store(0, 1);  // A
    fp::pwb(r.line(0));
    fp::pfence();
    std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(r.line(1))).store(1, std::memory_order_release);
  });
  t1.join();
  std::thread t2([&] {
    EXPECT_EQ(std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(r.line(1))).load(std::memory_order_acquire), 1u);
    r.store(2, 1);  // B
    fp::pwb(r.line(2));
    fp::psync();
  });
  t2.join();
  auto cs = fc::sim::capture();
  EXPECT_EQ(cs.model, model);
  auto set = fc::images_for(cs, 30, 7);
  *exhaustive = set.exhaustive;
  std::set<std::pair<int, int>> ab;
  for (const auto& img : set.images)
    ab.insert({static_cast<int>(r.in_image(cs, img, 0)), static_cast<int>(r.in_image(cs, img, 2))});
  return ab;
}

TEST(Models, FlagExampleX86NeverLosesAOnceBIsDurable) {
  bool exhaustive = false;
  auto ab = flag_example("x86", &exhaustive);
  EXPECT_TRUE(exhaustive);
  EXPECT_FALSE(ab.count({0, 1})) << "x86: B durable with A lost";
  EXPECT_EQ(ab, (std::set<std::pair<int, int>>{{1, 1}})) << "A and B are both durable on x86";
}

TEST(Models, FlagExampleAbstractAllowsBDurableALost) {
  bool exhaustive = false;
  auto ab = flag_example("abstract", &exhaustive);
  EXPECT_TRUE(exhaustive);
  EXPECT_TRUE(ab.count({0, 1})) << "abstract: pfence does not make A durable";
  EXPECT_EQ(ab, (std::set<std::pair<int, int>>{{0, 1}, {1, 1}}));
}

// x86: pfence is an sfence: the thread's earlier write-backs are durable.
TEST(Models, PfenceOnX86MakesEarlierWriteBacksDurable) {
  for (std::string_view m : {"x86", "abstract"}) {
    SimRange r(m);
    r.store(0, 5);
    fp::pwb(r.line(0));
    fp::pfence();
    const bool x86 = m == "x86";
    EXPECT_EQ(SimRange::word(fc::sim::media_line(r.line(0))), x86 ? 5u : 0u) << m;
    EXPECT_EQ(fc::sim::pending().size(), x86 ? 0u : 1u) << m;
    auto cs = fc::sim::capture();
    auto lost = fc::image_at(cs, fc::kImageAllLost, 1);
    ASSERT_TRUE(lost);
    EXPECT_EQ(r.in_image(cs, *lost, 0), x86 ? 5u : 0u) << m << ": image 0 after pwb; pfence";
  }
  // The other fences too (ofence, persist_barrier, dfence, join_strand);
  // new_strand is no fence.
  SimRange r("x86");
  int i = 0;
  for (auto fence : {+[] { fp::ofence(); }, +[] { fp::persist_barrier(); }, +[] { fp::dfence(); },
                     +[] { fp::join_strand(); }}) {
    r.store(static_cast<std::size_t>(i), 9);
    fp::pwb(r.line(static_cast<std::size_t>(i)));
    fence();
    EXPECT_EQ(SimRange::word(fc::sim::media_line(r.line(static_cast<std::size_t>(i)))), 9u) << i;
    ++i;
  }
  r.store(7, 9);
  fp::pwb(r.line(7));
  fp::new_strand();
  EXPECT_EQ(SimRange::word(fc::sim::media_line(r.line(7))), 0u);
}

// A <- 1; pwb A; pfence; B <- 1; pwb B. Abstract: {A lost, B lost},
// {A, no B}, {A, B}; x86: A is durable, so only the last two.
TEST(Models, AbstractAllowsLosingAFencedWriteBackX86DoesNot) {
  std::map<std::string, std::set<std::pair<int, int>>> seen;
  for (std::string_view m : {"abstract", "x86"}) {
    SimRange r(m);
    r.store(0, 1);
    fp::pwb(r.line(0));
    fp::pfence();
    r.store(1, 1);
    fp::pwb(r.line(1));
    auto cs = fc::sim::capture();
    auto set = fc::images_for(cs, 20, 3);
    EXPECT_TRUE(set.exhaustive) << m;
    EXPECT_EQ(set.possible, static_cast<double>(set.images.size())) << m;
    for (const auto& img : set.images)
      seen[std::string(m)].insert({static_cast<int>(r.in_image(cs, img, 0)), static_cast<int>(r.in_image(cs, img, 1))});
  }
  EXPECT_EQ(seen["abstract"], (std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {1, 1}}));
  EXPECT_EQ(seen["x86"], (std::set<std::pair<int, int>>{{1, 0}, {1, 1}}));
}

// Two ordinary stores to different words of one line between write-backs:
// x86 never shows the newer word with the older other one; abstract tears.
TEST(Models, SameLineStoresPersistInOrderOnX86) {
  for (std::string_view m : {"x86", "abstract"}) {
    for (bool written_back : {true, false}) {
      SimRange r(m);
      r.store(0, 11, 0);
      r.store(0, 22, 5);
      if (written_back) fp::pwb(r.line(0));
      auto cs = fc::sim::capture();
      std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
      auto set = fc::images_for(cs, 200, 9);
      for (const auto& img : set.images) seen.insert({r.in_image(cs, img, 0, 0), r.in_image(cs, img, 0, 5)});
      for (int i = 2; i < 300; ++i) {  // random images too (past the enumeration)
        auto img = fc::build_image(cs, i, 9);
        seen.insert({r.in_image(cs, img, 0, 0), r.in_image(cs, img, 0, 5)});
      }
      if (m == "x86") {
        EXPECT_EQ(seen, (std::set<std::pair<std::uint64_t, std::uint64_t>>{{0, 0}, {11, 22}}))
            << "written back: " << written_back;
        EXPECT_TRUE(set.exhaustive);
        EXPECT_EQ(set.images.size(), 2u);
        EXPECT_EQ(set.possible, 2.0);
      } else {
        EXPECT_EQ(seen, (std::set<std::pair<std::uint64_t, std::uint64_t>>{{0, 0}, {11, 22}, {0, 22}, {11, 0}}))
            << "abstract tears at any word; written back: " << written_back;
        EXPECT_TRUE(set.exhaustive) << "few torn images: enumerated";
        EXPECT_EQ(set.images.size(), 4u);
        EXPECT_EQ(set.possible, 4.0);
      }
    }
  }
}

// x86: only words of a declared multi-word store tear. Words 2..3 stored
// ordinarily, words 0..1 by a declared 16-byte store: 5 line values.
TEST(Models, X86TearsOnlyDeclaredMultiWordStores) {
  SimRange r("x86");
  r.store(0, 1, 2);
  r.store(0, 1, 3);
  const std::uint64_t two[2] = {1, 1};
  std::memcpy(r.line(0), two, 16);
  fp::declare_store(r.line(0), 16);
  auto cs = fc::sim::capture();
  ASSERT_EQ(cs.lines.size(), 1u);
  EXPECT_EQ(cs.declared[0], 0b11);
  auto set = fc::images_for(cs, 10, 1);
  EXPECT_TRUE(set.exhaustive);
  EXPECT_TRUE(set.possible_exact);
  std::set<std::vector<std::uint64_t>> seen;
  for (const auto& img : set.images) {
    std::vector<std::uint64_t> w;
    for (int i = 0; i < 4; ++i) w.push_back(r.in_image(cs, img, 0, i));
    EXPECT_EQ(w[2], w[3]) << "ordinary stores of one line never tear: " << img.how;
    if (w[2] == 0) {
      EXPECT_TRUE(w[0] == 0 && w[1] == 0) << "declared words tear towards the older value only";
    }
    seen.insert(w);
  }
  EXPECT_EQ(seen, (std::set<std::vector<std::uint64_t>>{{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 1, 1, 1}, {1, 0, 1, 1}, {0, 0, 1, 1}}));
  EXPECT_EQ(set.images.size(), 5u);
  EXPECT_EQ(set.possible, 5.0);
  auto whole = fc::images_for(cs, 10, 1, options(false));
  EXPECT_EQ(whole.images.size(), 2u);
  EXPECT_TRUE(whole.exhaustive);

  // The declared words belong to the interval before the pwb that copied
  // them: after pwb + an ordinary store, the working value does not tear
  // against the copy, the copy tears against media.
  fp::pwb(r.line(0));
  r.store(0, 2, 7);
  fp::declare_store(r.line(9), 8);  // another line: no effect on line 0
  auto cs2 = fc::sim::capture();
  ASSERT_EQ(cs2.pending.size(), 1u);
  EXPECT_EQ(cs2.pending[0].declared, 0b11);
  auto set2 = fc::images_for(cs2, 10, 1);
  for (const auto& img : set2.images) {
    if (r.in_image(cs2, img, 0, 7) == 2) {
      EXPECT_EQ(r.in_image(cs2, img, 0, 0), 1u) << img.how;
      EXPECT_EQ(r.in_image(cs2, img, 0, 1), 1u) << img.how;
    }
  }
  EXPECT_EQ(set2.possible, 6.0);  // media, copy (+3 torn), working
  // Declared stores outside the pool are ignored.
  std::uint64_t volatile_words[2] = {0, 0};
  fp::declare_store(volatile_words, sizeof volatile_words);
}

TEST(Models, AbstractTearsAnyWord) {
  SimRange r("abstract");
  for (int w = 0; w < 8; ++w) r.store(0, 100 + w, w);
  fp::pwb(r.line(0));
  auto cs = fc::sim::capture();
  auto set = fc::images_for(cs, 40, 5);
  EXPECT_FALSE(set.enumerated) << "2^8 torn values of the line: sampled";
  EXPECT_FALSE(set.exhaustive);
  EXPECT_FALSE(set.possible_exact);
  EXPECT_GE(set.possible, static_cast<double>(set.images.size()));
  bool torn = false;
  for (const auto& img : set.images) {
    int fresh = 0;
    for (int w = 0; w < 8; ++w) fresh += r.in_image(cs, img, 0, w) != 0;
    torn = torn || (fresh != 0 && fresh != 8);
  }
  EXPECT_TRUE(torn);
}

// Hand-built states: exact counts.
fc::CrashState x86_state() {
  fc::CrashState cs;
  cs.model = "x86";
  cs.k = 10;
  cs.size = 4096;
  cs.lines = {0, 64};
  cs.media = {line_of({0}), line_of({0})};
  cs.working = {line_of({2}), line_of({7})};
  cs.dirty = {true, true};
  cs.declared = {0, 0};
  fc::PendingWriteBack p;
  p.offset = 0;
  p.k = 3;
  p.data = line_of({1});
  cs.pending = {p};
  cs.epochs = {0};
  return cs;
}

TEST(Models, X86EnumerationIsAProductOverLines) {
  const auto cs = x86_state();
  auto set = fc::images_for(cs, 10, 1);
  EXPECT_TRUE(set.enumerated);
  EXPECT_TRUE(set.exhaustive);
  EXPECT_EQ(set.optional_lines, 2u);
  EXPECT_EQ(set.possible, 6.0);  // line 0: media, copy, working; line 1: media, working
  EXPECT_EQ(set.images.size(), 6u);
  EXPECT_EQ(set.built, 2u + 6u);  // 0, 1, then the six choices (two of them duplicates of 0 and 1)
  std::set<std::pair<std::uint64_t, std::uint64_t>> seen;
  for (const auto& img : set.images) seen.insert({SimRange::word(img.lines[0]), SimRange::word(img.lines[1])});
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(set.images[0].index, 0);
  EXPECT_EQ(set.images[1].index, 1);
  EXPECT_FALSE(fc::image_at(cs, 2 + 6, 1)) << "past an exhaustive enumeration";
  EXPECT_FALSE(fc::image_at(cs, -1, 1));
  // Above the threshold: sampled, with the exact count.
  auto sampled = fc::images_for(cs, 10, 1, options(true, 5));
  EXPECT_FALSE(sampled.enumerated);
  EXPECT_FALSE(sampled.exhaustive);
  EXPECT_EQ(sampled.possible, 6.0);
  EXPECT_TRUE(sampled.possible_exact);
  EXPECT_EQ(sampled.built, 12u);
}

// The abstract state of "A <- 1; pwb A; pfence; B <- 1; pwb B; C <- 1":
// five images (B => A; C evicted => A).
TEST(Models, AbstractEnumerationExactCount) {
  fc::CrashState cs;
  cs.model = "abstract";
  cs.k = 4;
  cs.size = 4096;
  cs.lines = {0, 64, 128};
  cs.media = {line_of({0}), line_of({0}), line_of({0})};
  cs.working = {line_of({1}), line_of({1}), line_of({1})};
  cs.dirty = {true, true, true};
  fc::PendingWriteBack a, b;
  a.offset = 0;
  a.k = 0;
  a.epoch = 0;
  a.data = line_of({1});
  b.offset = 64;
  b.k = 2;
  b.epoch = 1;
  b.data = line_of({1});
  cs.pending = {a, b};
  cs.epochs = {1};
  auto set = fc::images_for(cs, 10, 1);
  EXPECT_TRUE(set.exhaustive) << "one-word lines cannot tear";
  EXPECT_EQ(set.images.size(), 5u);
  EXPECT_EQ(set.possible, 5.0);
  std::set<std::tuple<int, int, int>> seen;
  for (const auto& img : set.images)
    seen.insert({static_cast<int>(SimRange::word(img.lines[0])), static_cast<int>(SimRange::word(img.lines[1])),
                 static_cast<int>(SimRange::word(img.lines[2]))});
  EXPECT_EQ(seen, (std::set<std::tuple<int, int, int>>{{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {1, 0, 1}, {1, 1, 1}}));
  // Each image index rebuilds the same image.
  for (const auto& img : set.images) {
    auto again = fc::image_at(cs, img.index, 1);
    ASSERT_TRUE(again);
    EXPECT_EQ(again->hash, img.hash);
  }
}

TEST(Models, ManyLinesAreSampledAndCounted) {
  for (std::string_view m : {"x86", "abstract"}) {
    SimRange r(m);
    for (std::size_t i = 0; i < 13; ++i) r.store(i, i + 1);
    auto cs = fc::sim::capture();
    auto set = fc::images_for(cs, 8, 4);
    EXPECT_FALSE(set.enumerated) << m;
    EXPECT_FALSE(set.exhaustive) << m;
    EXPECT_EQ(set.optional_lines, 13u) << m;
    EXPECT_EQ(set.built, 10u) << m;
    EXPECT_LE(set.images.size(), 10u);
    if (m == "x86") {
      EXPECT_EQ(set.possible, 8192.0);
      EXPECT_TRUE(set.possible_exact);
    } else {
      EXPECT_GE(set.possible, static_cast<double>(set.images.size()));
    }
  }
}

void expect_same(const fc::ImageSet& a, const fc::ImageSet& b) {
  ASSERT_EQ(a.images.size(), b.images.size());
  for (std::size_t i = 0; i < a.images.size(); ++i) {
    EXPECT_EQ(a.images[i].index, b.images[i].index);
    EXPECT_EQ(a.images[i].hash, b.images[i].hash);
    EXPECT_EQ(a.images[i].lines, b.images[i].lines);
    EXPECT_EQ(a.images[i].how, b.images[i].how);
  }
  EXPECT_EQ(a.exhaustive, b.exhaustive);
  EXPECT_EQ(a.possible, b.possible);
  EXPECT_EQ(a.built, b.built);
}

// A state with several threads, epochs, dirty lines and a declared store.
fc::CrashState busy_state(SimRange& r, int lines) {
  for (int i = 0; i < lines; ++i) {
    r.store(static_cast<std::size_t>(i), 3 * static_cast<std::uint64_t>(i) + 1, i % 8);
    r.store(static_cast<std::size_t>(i), 5, (i + 3) % 8);
    if (i % 3 == 0) fp::pwb(r.line(static_cast<std::size_t>(i)));
    if (i % 5 == 4) fp::pfence();
  }
  std::thread other([&] {
    r.store(static_cast<std::size_t>(lines) + 1, 77, 1);
    fp::pwb(r.line(static_cast<std::size_t>(lines) + 1));
    fp::pfence();
  });
  other.join();
  fp::pwb(r.line(1));  // pending under every model
  const std::uint64_t rec[2] = {9, 9};
  std::memcpy(r.line(0) + 16, rec, sizeof rec);
  fp::declare_store(r.line(0) + 16, sizeof rec);
  return fc::sim::capture();
}

TEST(Models, ImagesForIsDeterministicAndImageAtRebuildsEveryIndex) {
  for (std::string_view m : {"x86", "abstract"}) {
    for (int lines : {3, 20}) {  // enumerated, sampled
      SimRange r(m);
      const auto cs = busy_state(r, lines);
      const auto opt = options(true, 4096);
      const auto a = fc::images_for(cs, 12, 77, opt), b = fc::images_for(cs, 12, 77, opt);
      expect_same(a, b);
      for (const auto& img : a.images) {
        auto again = fc::image_at(cs, img.index, 77, opt);
        ASSERT_TRUE(again) << m << " " << img.index;
        EXPECT_EQ(again->index, img.index);
        EXPECT_EQ(again->hash, img.hash);
        EXPECT_EQ(again->lines, img.lines);
        EXPECT_EQ(again->how, img.how);
      }
      EXPECT_GE(a.possible, static_cast<double>(a.images.size()));
      if (lines == 3) {
        EXPECT_TRUE(a.enumerated) << m;
        EXPECT_TRUE(a.exhaustive) << m << ": torn images enumerated too";
        EXPECT_EQ(a.possible, static_cast<double>(a.images.size()));
        std::size_t torn = 0;
        for (const auto& img : a.images) torn += img.how.find(" torn") != std::string::npos && img.how.find(" 0 torn") == std::string::npos;
        EXPECT_GT(torn, 0u) << m;
      }
      if (lines == 20) {
        EXPECT_FALSE(a.enumerated) << m;
        const auto c = fc::images_for(cs, 12, 78, opt);
        bool differs = c.images.size() != a.images.size();
        for (std::size_t i = 0; !differs && i < a.images.size(); ++i) differs = a.images[i].hash != c.images[i].hash;
        EXPECT_TRUE(differs) << m << ": another seed, other random images";
      }
    }
  }
}

TEST(Models, CrashStateSerializeRoundTrip) {
  for (std::string_view m : {"x86", "abstract"}) {
    SimRange r(m);
    const auto cs = busy_state(r, 6);
    ASSERT_FALSE(cs.pending.empty());
    ASSERT_GT(cs.dirty_count(), 0u);
    std::string bytes;
    cs.serialize(bytes);
    const auto back = fc::CrashState::deserialize(bytes);
    EXPECT_TRUE(back == cs) << m;
    expect_same(fc::images_for(back, 6, 3), fc::images_for(cs, 6, 3));
    EXPECT_THROW(fc::CrashState::deserialize(std::string_view(bytes).substr(0, bytes.size() - 1)), std::invalid_argument);
    EXPECT_THROW(fc::CrashState::deserialize(bytes + "x"), std::invalid_argument);
    EXPECT_THROW(fc::CrashState::deserialize("garbage"), std::invalid_argument);
  }
  // A hand-built state without per-line annotations round-trips too.
  auto hand = x86_state();
  hand.declared.clear();
  hand.model_data = {1, 2, 3};
  std::string bytes;
  hand.serialize(bytes);
  EXPECT_TRUE(fc::CrashState::deserialize(bytes) == hand);
}

// Per-line coherence holds under x86 too: an older copy of another thread
// is dropped when a newer one becomes durable at a fence.
TEST(Models, X86KeepsPerLineCoherence) {
  SimRange r("x86");
  r.store(0, 1);
  std::thread b([&] { fp::pwb(r.line(0)); });  // copy of 1, pending in B
  b.join();
  r.store(0, 2);
  fp::pwb(r.line(0));
  fp::pfence();  // A's copy of 2 is durable
  EXPECT_TRUE(fc::sim::pending().empty());
  auto cs = fc::sim::capture();
  for (const auto& img : fc::images_for(cs, 10, 1).images) EXPECT_EQ(r.in_image(cs, img, 0), 2u);
}

}  // namespace

// The store models through the simulator: persist::store reaches the model
// (Backend::stored), ofence orders, dfence makes durable, pwb does nothing.
namespace {

std::set<std::pair<int, int>> annotated_pair(std::string_view model, bool fence, bool* exhaustive) {
  SimRange r(model);
  fp::store(reinterpret_cast<std::uint64_t*>(r.line(0)), std::uint64_t{1});  // A
  if (fence) fp::ofence();
  fp::store(reinterpret_cast<std::uint64_t*>(r.line(1)), std::uint64_t{1});  // F
  fp::pwb(r.line(1));
  auto cs = fc::sim::capture();
  EXPECT_EQ(cs.model, model);
  EXPECT_TRUE(fc::sim::pending().empty()) << "a store model keeps no write-backs";
  auto set = fc::images_for(cs, 10, 3);
  *exhaustive = set.exhaustive;
  std::set<std::pair<int, int>> af;
  for (const auto& img : set.images)
    af.insert({static_cast<int>(r.in_image(cs, img, 0)), static_cast<int>(r.in_image(cs, img, 1))});
  return af;
}

}  // namespace

TEST(Models, StoreModelsPersistAnnotatedStoresInTheirOrder) {
  for (std::string_view m : {"hops", "hops+", "strand"}) {
    bool exhaustive = false;
    EXPECT_EQ(annotated_pair(m, true, &exhaustive), (std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {1, 1}})) << m;
    EXPECT_TRUE(exhaustive) << m;
    EXPECT_EQ(annotated_pair(m, false, &exhaustive), (std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}}))
        << m;
  }
}

TEST(Models, DfenceAndJoinStrandMakeAnnotatedStoresDurablePwbDoesNot) {
  for (std::string_view m : {"hops", "hops+", "strand"}) {
    SimRange r(m);
    fp::store(reinterpret_cast<std::uint64_t*>(r.line(0)), std::uint64_t{7});
    fp::pwb(r.line(0));
    fp::psync();
    EXPECT_EQ(SimRange::word(fc::sim::media_line(r.line(0))), 7u) << m << ": psync acts as dfence / JoinStrand";
    r.store(1, 8);  // unannotated
    fp::pwb(r.line(1));
    fp::dfence();
    fp::join_strand();
    EXPECT_EQ(SimRange::word(fc::sim::media_line(r.line(1))), 0u) << m << ": an unannotated store is never made durable";
    auto cs = fc::sim::capture();
    auto set = fc::images_for(cs, 0, 1);
    std::set<std::uint64_t> seen;
    for (const auto& img : set.images) seen.insert(r.in_image(cs, img, 1));
    EXPECT_EQ(seen, (std::set<std::uint64_t>{0, 8})) << m << ": but it may be evicted";
    EXPECT_FALSE(fp::pfence_is_durable()) << m;
  }
}

// The simulator forwards lock hand-offs (persist::note_releasing /
// note_acquired) to the model: under hops+ (lock-history, HOPS+ paper §3)
// the acquirer's store persists after the releaser's, with no fence; under
// hops a lock orders nothing.
TEST(Models, HopsPlusOrdersACriticalSectionAfterTheOneItAcquiredTheLockFrom) {
  for (std::string_view m : {"hops", "hops+"}) {
    SimRange r(m);
    int lock = 0;
    std::thread([&] {
      fp::note_acquired(&lock);
      fp::store(reinterpret_cast<std::uint64_t*>(r.line(0)), std::uint64_t{1});  // A
      fp::note_releasing(&lock);
    }).join();
    std::thread([&] {
      fp::note_acquired(&lock);
      fp::store(reinterpret_cast<std::uint64_t*>(r.line(1)), std::uint64_t{1});  // B
      fp::note_releasing(&lock);
    }).join();
    auto cs = fc::sim::capture();
    auto set = fc::images_for(cs, 10, 3);
    EXPECT_TRUE(set.exhaustive) << m;
    std::set<std::pair<int, int>> ab;
    for (const auto& img : set.images)
      ab.insert({static_cast<int>(r.in_image(cs, img, 0)), static_cast<int>(r.in_image(cs, img, 1))});
    if (m == "hops+") EXPECT_EQ(ab, (std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {1, 1}})) << m;
    else EXPECT_EQ(ab, (std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {0, 1}, {1, 1}})) << m;
  }
}

// A store model's crash state travels (model_data) and its images are
// numbered like the others: image_at rebuilds every index images_for built.
TEST(Models, StoreModelStatesSerializeAndImageAtRebuildsEveryIndex) {
  for (std::string_view m : {"hops", "strand"}) {
    SimRange r(m);
    for (std::size_t i = 0; i < 4; ++i) {
      fp::store(reinterpret_cast<std::uint64_t*>(r.line(i)), std::uint64_t{i + 1});
      if (i == 1) fp::persist_barrier();
    }
    r.store(5, 9);  // unannotated: an eviction choice
    auto cs = fc::sim::capture();
    std::string enc;
    cs.serialize(enc);
    EXPECT_EQ(fc::CrashState::deserialize(enc), cs) << m;
    auto set = fc::images_for(cs, 3, 11);
    EXPECT_TRUE(set.exhaustive) << m;
    // Lines 0,1 (any subset: 4) then lines 2,3 (any subset, only once 0 and 1
    // persisted: + 3) = 7 closed sets, times 2 for line 5's eviction.
    EXPECT_EQ(set.images.size(), 14u) << m;
    for (const auto& img : set.images) {
      auto again = fc::image_at(cs, img.index, 11);
      ASSERT_TRUE(again) << m << " index " << img.index;
      EXPECT_EQ(again->hash, img.hash) << m << " index " << img.index;
    }
  }
}

}  // namespace model_test
