#include "ferrite/persist/persist.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace persist_test {  // this file's names, apart in a unity build

namespace fp = ferrite::persist;

namespace {

struct BackendGuard {
  const fp::Backend* saved = fp::installed();
  ~BackendGuard() { fp::install(saved); }
};

alignas(64) char g_buf[4096];

TEST(Persist, PwbCountsOneLinePerCacheLineTouched) {
  BackendGuard g;
  fp::reset_counters();
  fp::pwb(g_buf);                // 1 line
  fp::pwb(g_buf, 64);            // 1 line
  fp::pwb(g_buf + 60, 8);        // straddles: 2 lines
  fp::pwb(g_buf + 1, 128);       // 3 lines
  fp::pwb(g_buf, 0);             // nothing
  EXPECT_EQ(fp::thread_counters()[fp::Verb::kPwb], 7u);
}

TEST(Persist, EveryVerbIsCounted) {
  BackendGuard g;
  fp::reset_counters();
  fp::pfence(); fp::psync(); fp::psync(); fp::ofence(); fp::dfence();
  fp::persist_barrier(); fp::new_strand(); fp::join_strand();
  auto c = fp::thread_counters();
  EXPECT_EQ(c[fp::Verb::kPfence], 1u);
  EXPECT_EQ(c[fp::Verb::kPsync], 2u);
  EXPECT_EQ(c[fp::Verb::kOfence], 1u);
  EXPECT_EQ(c[fp::Verb::kDfence], 1u);
  EXPECT_EQ(c[fp::Verb::kPersistBarrier], 1u);
  EXPECT_EQ(c[fp::Verb::kNewStrand], 1u);
  EXPECT_EQ(c[fp::Verb::kJoinStrand], 1u);
  fp::reset_counters();
  EXPECT_EQ(fp::thread_counters()[fp::Verb::kPsync], 0u);
}

TEST(Persist, CountersSumAcrossThreads) {
  BackendGuard g;
  fp::reset_counters();
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([] { for (int i = 0; i < 1000; ++i) fp::pwb(g_buf + (i % 64) * 64); fp::psync(); });
  for (auto& t : ts) t.join();
  auto c = fp::counters();
  EXPECT_EQ(c[fp::Verb::kPwb], 4000u);
  EXPECT_EQ(c[fp::Verb::kPsync], 4u);
}

TEST(Persist, DetectsAFlushInstruction) {
  EXPECT_NE(fp::detect_flush(), fp::Flush::kNone);  // every x86-64 has clflush
  EXPECT_EQ(fp::active_flush(), fp::detect_flush());
}

TEST(Persist, ClflushFallbackPathWorks) {
  BackendGuard g;
  fp::BackendConfig cfg;
  ASSERT_TRUE(fp::parse_backend("hardware:clflush", &cfg));
  fp::install(fp::make_backend(cfg));
  EXPECT_EQ(fp::active_flush(), fp::Flush::kClflush);
  fp::reset_counters();
  g_buf[0] = 42;
  fp::pwb(g_buf, 256);
  fp::psync();
  EXPECT_EQ(g_buf[0], 42);  // clflush evicts but never changes contents
  EXPECT_EQ(fp::thread_counters()[fp::Verb::kPwb], 4u);
}

TEST(Persist, EveryBackendRunsEveryVerb) {
  BackendGuard g;
  for (const char* text : {"hardware", "hardware:clflush", "off", "nosync", "emulated:100", "emulated:50:10"}) {
    SCOPED_TRACE(text);
    fp::BackendConfig cfg;
    ASSERT_TRUE(fp::parse_backend(text, &cfg));
    EXPECT_EQ(cfg.to_string(), std::string(text) == "nosync" ? "nosync" : text);
    fp::install(fp::make_backend(cfg));
    fp::reset_counters();
    fp::pwb(g_buf, 64); fp::pfence(); fp::psync(); fp::ofence(); fp::dfence();
    fp::persist_barrier(); fp::new_strand(); fp::join_strand();
    EXPECT_EQ(fp::thread_counters()[fp::Verb::kPwb], 1u);
    EXPECT_EQ(fp::thread_counters()[fp::Verb::kPsync], 1u);
  }
}

// publish_fence is the paper's pfence on every real (x86) backend: nosync
// keeps it and emulated:NS charges no media delay for it, as for any pfence.
TEST(Persist, PublishFenceIsAPfenceOnEveryX86Backend) {
  BackendGuard g;
  for (const char* text : {"hardware", "off", "nosync", "emulated:100"}) {
    SCOPED_TRACE(text);
    fp::BackendConfig cfg;
    ASSERT_TRUE(fp::parse_backend(text, &cfg));
    fp::install(fp::make_backend(cfg));
    EXPECT_TRUE(fp::pfence_is_durable());
    fp::reset_counters();
    fp::publish_fence();
    EXPECT_EQ(fp::thread_counters()[fp::Verb::kPfence], 1u);
    EXPECT_EQ(fp::thread_counters()[fp::Verb::kPsync], 0u);
  }
}

// Stores through persist::store reach memory on every real backend.
TEST(Persist, AnnotatedStoresStoreOnEveryBackend) {
  BackendGuard g;
  for (const char* text : {"hardware", "off", "emulated:100"}) {
    fp::BackendConfig cfg;
    ASSERT_TRUE(fp::parse_backend(text, &cfg));
    fp::install(fp::make_backend(cfg));
    std::uint64_t x = 0;
    fp::store(&x, std::uint64_t{7});
    EXPECT_EQ(x, 7u);
    char buf[24] = {};
    fp::store_bytes(buf, "annotated stores", 17);
    EXPECT_STREQ(buf, "annotated stores");
  }
}

TEST(Persist, OffBackendIssuesNothingButStillCounts) {
  BackendGuard g;
  fp::BackendConfig cfg;
  ASSERT_TRUE(fp::parse_backend("off", &cfg));
  fp::install(fp::make_backend(cfg));
  EXPECT_EQ(fp::active_flush(), fp::Flush::kNone);
  fp::reset_counters();
  fp::pwb(g_buf, 640);
  EXPECT_EQ(fp::thread_counters()[fp::Verb::kPwb], 10u);
}

TEST(Persist, EmulatedDelayIsPaidPerSync) {
  BackendGuard g;
  fp::BackendConfig cfg;
  ASSERT_TRUE(fp::parse_backend("emulated:200000", &cfg));  // 200 us
  fp::install(fp::make_backend(cfg));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) fp::psync();
  auto dt = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(dt, std::chrono::milliseconds(2));  // at least 10 x 200 us: a lower bound, never a speed goal
}

TEST(Persist, ParseRejectsGarbage) {
  fp::BackendConfig cfg;
  for (const char* bad : {"", "hard", "emulated:", "emulated:x", "emulated:1:", "hardware:foo", "emulated:-1"})
    EXPECT_FALSE(fp::parse_backend(bad, &cfg)) << bad;
  EXPECT_THROW(fp::make_backend(fp::BackendConfig{fp::BackendConfig::Kind::kSim}), std::invalid_argument);
}

TEST(Persist, SimWithoutSimulatorIsAClearError) {
  fp::set_sim_hooks({nullptr, nullptr});
  EXPECT_THROW(fp::sim_attach(g_buf, sizeof g_buf), std::logic_error);
}

}  // namespace

}  // namespace persist_test
