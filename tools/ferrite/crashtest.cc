// `ferrite crashtest` — crash campaigns on registered structures
// (crash/campaign.h, docs/crash.md).
//
//   ferrite crashtest --list [--json]
//   ferrite crashtest --structure S [--variant V] [--threads T] [--ops N]
//                     [--images I] [--seed X] [--crash-points P]
//                     [--model abstract|x86|hops|hops+|strand|all] [--post-ops N]
//                     [--crash-recovery D] [--post-crash-every N] [--crash-create [--create-crash-points N]] [--workers W]
//                     [--pool-size BYTES] [--no-tearing] [--replay K:IMAGE]
//                     [--json]
//   ferrite crashtest --all [--json]
//
// Exit: 0 no violation (--all: every correct variant clean and every broken
// one caught), 1 a violation (--all: an expectation failed), 3 no violation
// but an inconclusive image, 2 usage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "adapters/logging_options.h"
#include "ferrite/cli.h"
#include "ferrite/crash/campaign.h"
#include "ferrite/crash/mutate.h"
#include "ferrite/crash/model.h"
#include "ferrite/pmem/layout.h"

namespace {

namespace fc = ferrite::crash;
using Json = nlohmann::json;

struct Opts {
  bool list = false, json = false, all = false, no_tearing = false, quiet = false;
  std::string structure, variant = "correct", replay;
  std::string key_size, value_size;  // "N" or "A..B" (byte-string structures)
  int threads = 1, images = 8;
  std::size_t ops = 200, crash_points = 0, pool_size = std::size_t{1} << 20;
  std::uint64_t seed = 1;
  std::size_t checker_budget = 0;  // 0: the checker's default
  std::uint64_t stop_after = 0;
  std::string model;  // "abstract", "x86" or "all"; empty: abstract (--all: all)
  int workers = 0;
  std::size_t post_ops = fc::CampaignConfig{}.post_ops;
  int crash_recovery = 0;
  std::size_t recovery_points = fc::CampaignConfig{}.recovery_crash_points;
  std::size_t recovery_every = 1;
  int recovery_images = fc::CampaignConfig{}.recovery_crash_images;
  std::size_t post_crash_every = 0;
  std::size_t post_crash_points = fc::CampaignConfig{}.post_crash_points;
  int post_crash_images = fc::CampaignConfig{}.post_crash_images;
  bool crash_create = false;
  std::size_t create_crash_points = 0;
  std::string schedule = "random", verb_order;
  int pct_depth = fc::CampaignConfig{}.pct_depth;
  bool mutate = false;
  int mutate_seeds = 1;
  std::string mutate_only;  // --mutate-only: a substring of the sites' files
  std::vector<std::string> mutate_sites;
  std::size_t commit_batch = 1;  // ATLAS / SFR logging workloads (adapters/logging_options.h)
  int instance_threads = 0;
  bool dirty_heap = false;
};

// The models a run covers: --model all = every model the variant claims.
std::vector<std::string> models_of(const std::string& model, const fc::SubjectInfo& s) {
  if (model != "all") return {model.empty() ? fc::CampaignConfig{}.model : model};
  return s.models.empty() ? fc::writeback_model_names() : s.models;
}

[[noreturn]] void usage(const std::string& msg) {
  std::fprintf(stderr, "ferrite crashtest: %s\n", msg.c_str());
  throw ferrite::cli::Exit{2};
}

Json to_json(const fc::SubjectInfo& s, const fc::CampaignResult& r) {
  Json j;
  j["structure"] = r.structure;
  j["variant"] = r.variant;
  j["model"] = r.model;
  j["expect_violation"] = s.expect_violation;
  j["threads"] = r.threads;
  j["ops"] = r.ops;
  j["seed"] = r.seed;
  j["key_size"] = {r.sizes.key_min, r.sizes.key_max};
  j["value_size"] = {r.sizes.value_min, r.sizes.value_max};
  j["verbs"] = r.verbs;
  j["crash_points"] = r.crash_points;
  j["images"] = r.images_checked;
  j["images_built"] = r.images_built;
  j["images_deduped"] = r.images_deduped;
  j["lines_per_image"] = r.lines_per_image;
  j["points_exhaustive"] = r.points_exhaustive;
  j["possible_images"] = r.possible_images;
  j["coverage"] = r.coverage;
  j["nested_images"] = r.nested_images;
  j["second_images"] = r.second_images;
  j["create_points"] = r.create_points;
  j["worker_restarts"] = r.worker_restarts;
  j["schedule"] = r.schedule;
  if (r.schedule_diverged) j["schedule_diverged"] = true;
  if (r.schedule != "free") j["schedule_stalls"] = r.schedule_stalls;
  j["violations"] = r.violations;
  j["inconclusive"] = r.inconclusive;
  j["checker"] = r.engines;
  j["seconds"] = r.seconds;
  j["images_per_second"] = r.images_per_second;
  if (!r.error.empty()) j["error"] = r.error;
  j["violation_details"] = Json::array();
  for (const auto& v : r.details)
    j["violation_details"].push_back({{"k", v.k},
                                      {"image", v.image},
                                      {"property", v.property},
                                      {"checker", v.engine},
                                      {"reason", v.reason},
                                      {"image_how", v.image_how},
                                      {"verb_order", v.verb_order},
                                      {"replay", v.replay}});
  return j;
}

std::string engines_text(const fc::CampaignResult& r) {
  std::string s;
  for (const auto& [e, n] : r.engines) s += (s.empty() ? "" : ", ") + e + " x" + std::to_string(n);
  return s.empty() ? "-" : s;
}

void print_text(const fc::CampaignResult& r) {
  std::printf("%s/%s [%s]: %d thread(s), %zu ops, %llu verbs, %llu crash points (%llu exhaustive), %llu images checked "
              "(%llu duplicates; coverage %.1f%%), %llu violation(s), %llu inconclusive; checker: %s; %.0f images/s (%.1f s)\n",
              r.structure.c_str(), r.variant.c_str(), r.model.c_str(), r.threads, r.ops,
              static_cast<unsigned long long>(r.verbs), static_cast<unsigned long long>(r.crash_points),
              static_cast<unsigned long long>(r.points_exhaustive), static_cast<unsigned long long>(r.images_checked),
              static_cast<unsigned long long>(r.images_deduped), 100.0 * r.coverage,
              static_cast<unsigned long long>(r.violations), static_cast<unsigned long long>(r.inconclusive),
              engines_text(r).c_str(), r.images_per_second, r.seconds);
  if (r.nested_images > 0 || r.create_points > 0)
    std::printf("  %llu image(s) checked after crashes during recovery; %llu crash point(s) inside create\n",
                static_cast<unsigned long long>(r.nested_images), static_cast<unsigned long long>(r.create_points));
  if (r.second_images > 0)
    std::printf("  %llu image(s) checked after a second crash during post-recovery ops\n",
                static_cast<unsigned long long>(r.second_images));
  if (!r.error.empty()) std::printf("  error: %s\n", r.error.c_str());
  if (r.schedule_diverged)
    std::printf("  note: the recorded verb order could not be followed to the end (the run went on unordered)\n");
  if (r.schedule_stalls > 0)
    std::printf("  note: %llu grant(s) did not wait for a thread that stayed runnable between points for 200 ms "
                "(a wait loop without sync::spin_wait?): those stretches ran concurrently; after 10 the rest of the run is "
                "unscheduled and its violations carry no schedule\n",
                static_cast<unsigned long long>(r.schedule_stalls));
  for (const auto& v : r.details) {
    std::printf("  VIOLATION at crash point %llu, image %d: %s [%s]: %s\n", static_cast<unsigned long long>(v.k),
                v.image, v.property.c_str(), v.engine.c_str(), v.reason.c_str());
    if (!v.image_how.empty()) std::printf("    image: %s\n", v.image_how.c_str());
    std::printf("    replay: %s\n", v.replay.c_str());
  }
  if (r.violations > r.details.size())
    std::printf("  (%llu more violation(s) not shown)\n", static_cast<unsigned long long>(r.violations - r.details.size()));
}

// "N" or "A..B" (bytes, A <= B <= the payload limit) into [*lo, *hi].
bool parse_size_range(const std::string& t, std::size_t* lo, std::size_t* hi) {
  const auto dots = t.find("..");
  try {
    std::size_t used = 0;
    const std::string a = dots == std::string::npos ? t : t.substr(0, dots);
    const std::string b = dots == std::string::npos ? t : t.substr(dots + 2);
    *lo = std::stoull(a, &used);
    if (used != a.size()) return false;
    *hi = std::stoull(b, &used);
    if (used != b.size()) return false;
  } catch (...) {
    return false;
  }
  return *lo <= *hi && *hi <= (std::size_t{16} << 20);
}

fc::CampaignConfig config_of(const Opts& o) {
  fc::CampaignConfig c;
  if (!o.key_size.empty() && !parse_size_range(o.key_size, &c.sizes.key_min, &c.sizes.key_max))
    usage("--key-size '" + o.key_size + "': give N or A..B bytes (A <= B <= 16777216)");
  if (!o.value_size.empty() && !parse_size_range(o.value_size, &c.sizes.value_min, &c.sizes.value_max))
    usage("--value-size '" + o.value_size + "': give N or A..B bytes (A <= B <= 16777216)");
  c.threads = o.threads;
  c.ops = o.ops;
  c.images = o.images;
  c.seed = o.seed;
  c.crash_points = o.crash_points;
  c.pool_size = o.pool_size;
  c.tearing = !o.no_tearing;
  c.stop_after_violations = o.stop_after;
  if (!o.model.empty()) c.model = o.model;
  c.workers = o.workers;
  c.post_ops = o.post_ops;
  c.recovery_crash_depth = o.crash_recovery;
  c.recovery_crash_points = o.recovery_points;
  c.recovery_crash_every = o.recovery_every;
  c.recovery_crash_images = o.recovery_images;
  c.post_crash_every = o.post_crash_every;
  c.post_crash_points = o.post_crash_points;
  c.post_crash_images = o.post_crash_images;
  c.crash_create = o.crash_create;
  if (o.commit_batch != 1) c.replay_extra = "--commit-batch " + std::to_string(o.commit_batch);
  for (const auto& [flag, v] : {std::pair<const char*, const std::string*>{"--key-size", &o.key_size},
                                {"--value-size", &o.value_size}})
    if (!v->empty()) c.replay_extra += (c.replay_extra.empty() ? "" : " ") + std::string(flag) + " " + *v;
  c.create_crash_points = o.create_crash_points;
  c.schedule = o.schedule == "pct"      ? fc::CampaignConfig::Schedule::kPct
               : o.schedule == "random" ? fc::CampaignConfig::Schedule::kRandom
                                        : fc::CampaignConfig::Schedule::kFree;
  c.pct_depth = o.pct_depth;
  c.verb_order = o.verb_order;
  c.mutate_sites = o.mutate_sites;
  c.instance_threads = o.instance_threads;
  c.dirty_heap = o.dirty_heap;
  if (o.checker_budget > 0) c.check.node_budget = o.checker_budget;
  if (!o.replay.empty()) {
    const auto colon = o.replay.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      std::size_t used = 0;
      const auto k = std::stoull(o.replay.substr(0, colon), &used);
      if (used != colon) throw std::invalid_argument("k");
      const std::string img = o.replay.substr(colon + 1);
      const int image = std::stoi(img, &used);
      if (used != img.size() || image < 0) throw std::invalid_argument("image");
      c.replay = fc::CampaignConfig::Replay{k, image};
    } catch (const std::exception&) {
      usage("--replay expects K:IMAGE (two non-negative integers), got '" + o.replay + "'");
    }
  }
  if (!o.quiet) {
    auto last = std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    c.progress = [last](const fc::CampaignProgress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (now - *last < std::chrono::seconds(1)) return;
      *last = now;
      std::fprintf(stderr, "crashtest: %.0f s, %llu ops done, %llu crash points, %llu images, %llu violation(s)\n",
                   p.seconds, static_cast<unsigned long long>(p.ops_done),
                   static_cast<unsigned long long>(p.crash_points), static_cast<unsigned long long>(p.images_checked),
                   static_cast<unsigned long long>(p.violations));
    };
  }
  return c;
}

std::string hits_text(const fc::sites::Site& s) {
  std::string t;
  for (int p = 0; p < fc::sites::kPhases; ++p)
    if (s.hits[static_cast<std::size_t>(p)] > 0)
      t += (t.empty() ? "" : ", ") + std::string(fc::sites::phase_name(static_cast<fc::sites::Phase>(p))) + " " +
           std::to_string(s.hits[static_cast<std::size_t>(p)]);
  return t;
}

// --mutate: every call site, suppressed one at a time (crash/mutate.h).
// Exit 0 when every site is caught, 1 when some is not (or the unmutated
// campaign fails), 2 usage.
void run_mutate(const Opts& o, const fc::SubjectInfo& s) {
  if (o.model == "all") usage("--mutate runs one model at a time (give --model abstract or x86)");
  if (!o.replay.empty() || !o.mutate_sites.empty() || !o.verb_order.empty())
    usage("--mutate chooses its own sites and crash points: drop --replay, --mutate-site and --verb-order");
  Opts q = o;
  q.quiet = true;
  fc::CampaignConfig cfg = config_of(q);
  fc::MutationResult m;
  try {
    m = fc::run_mutation(s, cfg, [&](std::size_t i, std::size_t n, const fc::SiteVerdict& v) {
      if (!o.quiet)
        std::fprintf(stderr, "mutate: %zu/%zu %s %s (%.1f s)\n", i, n, v.site.id().c_str(), v.how.c_str(), v.seconds);
    }, o.mutate_seeds, [&](const ferrite::crash::sites::Site& site) {
      return o.mutate_only.empty() || site.file.find(o.mutate_only) != std::string::npos;
    });
  } catch (const std::invalid_argument& e) {
    usage(e.what());
  }
  if (o.json) {
    Json sites = Json::array();
    for (const auto& v : m.sites) {
      Json hits = Json::object();
      for (int p = 0; p < fc::sites::kPhases; ++p)
        hits[fc::sites::phase_name(static_cast<fc::sites::Phase>(p))] = v.site.hits[static_cast<std::size_t>(p)];
      sites.push_back({{"site", v.site.id()},
                       {"file", v.site.file},
                       {"line", v.site.line},
                       {"column", v.site.column},
                       {"verb", std::string(ferrite::persist::verb_name(v.site.verb))},
                       {"function", v.site.function},
                       {"hits", hits},
                       {"verdict", v.caught ? "caught" : "not caught"},
                       {"how", v.how},
                       {"property", v.property},
                       {"reason", v.reason},
                       {"replay", v.replay},
                       {"suppressed", v.suppressed},
                       {"images", v.images},
                       {"seed", v.seed},
                       {"seeds_tried", v.seeds_tried},
                       {"seconds", v.seconds}});
    }
    Json j{{"structure", m.structure}, {"variant", m.variant},     {"model", m.model},
           {"sites", sites},           {"caught", m.caught},       {"total", m.sites.size()},
           {"score", m.sites.empty() ? 0.0 : static_cast<double>(m.caught) / static_cast<double>(m.sites.size())},
           {"seconds", m.seconds},     {"seeds", m.seeds},         {"baseline", to_json(s, m.baseline)}};
    if (!m.error.empty()) j["error"] = m.error;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s/%s [%s]: mutation testing of %zu persistence call site(s) (baseline: %llu crash points, %llu "
                "images, 0 violations%s)\n",
                m.structure.c_str(), m.variant.c_str(), m.model.c_str(), m.sites.size(),
                static_cast<unsigned long long>(m.baseline.crash_points),
                static_cast<unsigned long long>(m.baseline.images_checked),
                m.seeds > 1 ? (", first of " + std::to_string(m.seeds) + " seeds").c_str() : "");
    for (const auto& v : m.sites) {
      std::printf("  %-11s %s  [%s]\n", v.caught ? "caught" : v.how.c_str(), v.site.id().c_str(),
                  hits_text(v.site).c_str());
      if (v.caught && !v.replay.empty()) std::printf("      %s: %s\n      replay: %s\n", v.property.c_str(),
                                                      v.reason.substr(0, 160).c_str(), v.replay.c_str());
      if (v.how == "error") std::printf("      error: %s\n", v.reason.c_str());
    }
    if (m.error.empty())
      std::printf("score: %zu/%zu sites caught (%.0f%%) in %.1f s\n", m.caught, m.sites.size(),
                  m.sites.empty() ? 0.0 : 100.0 * static_cast<double>(m.caught) / static_cast<double>(m.sites.size()),
                  m.seconds);
  }
  if (!m.error.empty()) {
    std::fprintf(stderr, "ferrite crashtest --mutate: %s\n", m.error.c_str());
    throw ferrite::cli::Exit{1};
  }
  throw ferrite::cli::Exit{m.caught == m.sites.size() ? 0 : 1};
}

void run_list(const Opts& o) {
  auto all = fc::subjects();
  std::sort(all.begin(), all.end(),
            [](auto& a, auto& b) { return std::tie(a.structure, a.variant) < std::tie(b.structure, b.variant); });
  if (o.json) {
    Json j = Json::array();
    for (const auto& s : all)
      j.push_back({{"structure", s.structure},
                   {"variant", s.variant},
                   {"expect_violation", s.expect_violation},
                   {"description", s.description}});
    std::printf("%s\n", j.dump(2).c_str());
    return;
  }
  for (const auto& s : all)
    std::printf("%-20s %-18s %s%s\n", s.structure.c_str(), s.variant.c_str(),
                s.expect_violation ? "[broken: expected to fail] " : "", s.description.c_str());
}

void run_all(const Opts& o) {
  Json runs = Json::array();
  bool ok = true;
  for (const auto& s : fc::subjects()) {
    for (const auto& model : models_of(o.model.empty() ? "all" : o.model, s)) {
      // One thread, every crash point; then three threads, sampled (some
      // bugs need concurrency). Broken variants stop at the first catch.
      Opts q = o;
      q.model = model;
      q.ops = std::min<std::size_t>(o.ops, 40);
      q.images = std::min(o.images, 4);
      q.threads = 1;
      q.crash_points = 0;
      q.quiet = true;
      q.replay.clear();
      // Creation persists through pwb/psync, which the store models do not
      // execute: under them --all crashes the operations only.
      if (!fc::crash_create_needs_writeback(model).empty()) q.crash_create = false;
      if (s.expect_violation) q.stop_after = 1;  // one catch is the verdict
      auto r = fc::run_campaign(s, config_of(q));
      if (r.error.empty() && (!s.expect_violation || r.violations == 0)) {
        Opts m = q;
        m.threads = 3;
        m.ops = 200;
        m.crash_points = 60;
        auto rm = fc::run_campaign(s, config_of(m));
        // A broken variant whose bug needs a race (e.g. a helper's missing
        // write-back) gets up to 8 seeds (3 or 4 threads), stopping at its
        // first catch.
        for (std::uint64_t extra = 1; s.expect_violation && rm.error.empty() && rm.violations == 0 && extra < 8;
             ++extra) {
          m.seed = o.seed + extra;
          m.threads = 3 + static_cast<int>(extra % 2);  // 4 threads widen the helper races
          rm = fc::run_campaign(s, config_of(m));
        }
        if (!rm.error.empty() || rm.violations > 0 || s.expect_violation) r = rm;
      }
      // A broken recovery whose bug needs a second crash (one during
      // recovery: e.g. montage's restore-before-reset) gets one 1-thread run
      // with crashes during recovery.
      if (s.expect_violation && r.error.empty() && r.violations == 0) {
        Opts c = q;
        c.ops = 60;
        c.crash_recovery = 1;
        c.recovery_points = 4;
        c.recovery_every = 2;
        if (auto rc = fc::run_campaign(s, config_of(c)); !rc.error.empty() || rc.violations > 0) r = rc;
      }
      // A broken recovery whose bug needs a crash after new operations
      // (montage's no-recovery-reset: rejected blocks revive once the
      // recovered run has synced) gets one 1-thread run with a second crash
      // during the post-recovery ops.
      if (s.expect_violation && r.error.empty() && r.violations == 0) {
        Opts c = q;
        c.ops = 60;
        c.post_ops = 32;
        c.post_crash_every = 2;
        if (auto rc = fc::run_campaign(s, config_of(c)); !rc.error.empty() || rc.violations > 0) r = rc;
      }
      // An inconclusive image is never a pass for a correct variant.
      const bool as_expected =
          r.error.empty() && (s.expect_violation ? r.violations >= 1 : r.violations == 0 && r.inconclusive == 0);
      ok = ok && as_expected;
      if (o.json) {
        Json j = to_json(s, r);
        j["as_expected"] = as_expected;
        runs.push_back(j);
      } else {
        std::printf("%s %-20s %-18s %-8s %d thread(s): %llu crash points, %llu images, %llu violation(s)%s%s\n",
                    as_expected ? "ok  " : "FAIL", s.structure.c_str(), s.variant.c_str(), model.c_str(), r.threads,
                    static_cast<unsigned long long>(r.crash_points), static_cast<unsigned long long>(r.images_checked),
                    static_cast<unsigned long long>(r.violations), s.expect_violation ? " (expected >= 1)" : "",
                    r.error.empty() ? "" : (" error: " + r.error).c_str());
        if (!as_expected && !r.details.empty()) std::printf("     first: %s\n", r.details.front().replay.c_str());
      }
    }
  }
  if (o.json) std::printf("%s\n", Json{{"runs", runs}, {"ok", ok}}.dump(2).c_str());
  throw ferrite::cli::Exit{ok ? 0 : 1};
}

void setup_crashtest(CLI::App* sub) {
  auto o = std::make_shared<Opts>();
  sub->add_flag("--list", o->list, "List registered structures and variants");
  sub->add_flag("--all", o->all, "Run every registered structure and variant with quick settings");
  sub->add_option("--structure,-s", o->structure, "Structure to test (see --list)");
  sub->add_option("--variant,-v", o->variant, "Variant (default: correct)");
  sub->add_option("--threads,-t", o->threads, "Threads")->check(CLI::Range(1, 64));
  sub->add_option("--ops,-n", o->ops, "Operations (total over all threads)")->check(CLI::Range(1, 1000000));
  sub->add_option("--images", o->images, "Random images per crash point (plus all-lost and all-persisted)")
      ->check(CLI::Range(0, 100000));
  sub->add_option("--seed", o->seed, "Seed (workload, crash-point sample, images)");
  sub->add_option("--key-size", o->key_size,
                  "Byte-string structures: key sizes, N or A..B bytes (each key's size drawn from the range; "
                  "read back byte for byte)");
  sub->add_option("--value-size", o->value_size,
                  "Byte-string structures: value sizes, N or A..B bytes (at least 8: a value's first 8 bytes "
                  "identify it; read back byte for byte)");
  sub->add_option("--crash-points", o->crash_points,
                  "Crash points to sample (0: every verb with 1 thread, 300 with several)");
  sub->add_option("--pool-size", o->pool_size, "Simulated pool size in bytes (default 1 MiB)")
      ->check(CLI::Range(ferrite::pmem::layout::kMinPoolSize, std::size_t{1} << 34));  // a pool's own bounds
  sub->add_option("--stop-after", o->stop_after,
                  "Stop crashing after this many violations (0: explore every crash point)");
  sub->add_flag("--no-tearing", o->no_tearing, "Random images never tear lines at 8-byte boundaries");
  sub->add_option("--model", o->model,
                  "Persistency model: abstract (the PBcomb paper's pwb/pfence/psync, default), x86 (clwb+sfence), "
                  "hops, hops+, strand (annotated stores persist: for code written for them), "
                  "or all (every model the variant claims, the write-back models abstract and x86 unless it names "
                  "others; --all defaults to all)");
  sub->add_option("--post-ops", o->post_ops, "Operations run and checked after each recovery (default 8)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{100000}));
  sub->add_option("--crash-recovery", o->crash_recovery,
                  "Crash recovery itself: 1 a second crash during recovery, 2 a third one during that recovery")
      ->check(CLI::Range(0, 2));
  sub->add_option("--recovery-crash-points", o->recovery_points,
                  "With --crash-recovery: recovery verbs crashed per image (sampled; 0: every verb; default 3)");
  sub->add_option("--recovery-crash-every", o->recovery_every,
                  "With --crash-recovery: crash recovery at every n-th crash point only (default 1)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  sub->add_option("--recovery-crash-images", o->recovery_images,
                  "With --crash-recovery: random images per recovery crash, plus all-lost and all-persisted (default 1)")
      ->check(CLI::Range(0, 1000));
  sub->add_option("--post-crash-every", o->post_crash_every,
                  "A second crash after recovery: at every n-th crash point, each image is recovered, its pending ops "
                  "completed and the --post-ops run (syncs included) under the simulator, crashed during those ops, "
                  "and recovered again; the state must be the first recovered state plus a prefix of the post ops "
                  "(0: off, default)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  sub->add_option("--post-crash-points", o->post_crash_points,
                  "With --post-crash-every: verbs of the post-recovery ops crashed per image, plus the end of the ops "
                  "(default 3)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  sub->add_option("--post-crash-images", o->post_crash_images,
                  "With --post-crash-every: random images per second crash, plus all-lost and all-persisted (default 1)")
      ->check(CLI::Range(0, 1000));
  auto* cc = sub->add_flag("--crash-create", o->crash_create, "Crash points during pool and structure creation as well");
  sub->add_option("--create-crash-points", o->create_crash_points,
                  "With --crash-create: sample about this many of the verbs inside creation as crash points (default 0: "
                  "every one)")
      ->needs(cc)
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 30));
  sub->add_option("--workers", o->workers, "Processes that recover and check images (0: one per core)")
      ->check(CLI::Range(0, 256));
  sub->add_option("--schedule", o->schedule,
                  "Several threads: random (default: one thread at a time between persistence verbs, operation starts "
                  "and spin-wait retries, the next one drawn from the seed; each violation's replay line records the "
                  "schedule), pct (the same points, random priorities with --pct-depth - 1 change points) or free "
                  "(the OS interleaves the threads; the interleaving is not replayed)")
      ->check(CLI::IsMember({"free", "pct", "random"}));
  sub->add_option("--pct-depth", o->pct_depth, "With --schedule pct: priority change points + 1 (default 3)")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--verb-order", o->verb_order,
                  "Replay: enforce this recorded verb order (from a scheduled run's replay line)");
  sub->add_option("--checker-budget", o->checker_budget,
                  "Exact checker: search nodes per image before it gives up (inconclusive; default 20000)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  sub->add_option("--replay", o->replay, "Replay one crash point and image: K:IMAGE (from a violation)");
  sub->add_flag("--mutate", o->mutate,
                "Mutation testing: run the campaign once per persistence call site with that site's verbs suppressed; "
                "report each site caught or not caught (exit 0 only if every site is caught)");
  sub->add_option("--mutate-seeds", o->mutate_seeds,
                  "With --mutate: campaigns per site, seeds --seed, --seed + 1, ... (each baseline must pass; a site "
                  "is caught when one of them catches it; default 1)")
      ->check(CLI::Range(1, 1000));
  sub->add_option("--mutate-only", o->mutate_only,
                  "With --mutate: try only the sites whose file's path contains this text (e.g. ferrite/mirror/)");
  sub->add_option("--mutate-site", o->mutate_sites,
                  "Suppress the verbs of this call site, FILE:LINE[:COL][:VERB] (repeatable; from a --mutate replay line)");
  sub->add_option("--instance-threads", o->instance_threads,
                  "Size the instance for this many threads (more than --threads: per-thread response and tag words "
                  "on lines the workload does not touch)")
      ->check(CLI::Range(0, 64));
  sub->add_flag("--dirty-heap", o->dirty_heap,
                "Fill the new pool's heap with durable garbage before the structure is created (a used pool)");
  sub->add_option("--commit-batch", o->commit_batch, ferrite::adapters::kCommitBatchHelp)
      ->check(CLI::Range(std::size_t{1}, ferrite::adapters::kMaxCommitBatch));
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->add_flag("--quiet,-q", o->quiet, "No progress on stderr");
  sub->callback([o] {
    // relaxed: set before any subject is built (campaign workers fork after)
    ferrite::adapters::logging_commit_batch().store(o->commit_batch, std::memory_order_relaxed);
    if (o->list) {
      run_list(*o);
      throw ferrite::cli::Exit{0};
    }
    if (o->all) run_all(*o);
    if (o->structure.empty()) usage("give --structure S (see --list), --list or --all");
    const fc::SubjectInfo* s = fc::find_subject(o->structure, o->variant);
    if (s == nullptr) {
      std::string known;
      for (const auto& x : fc::subjects())
        if (x.structure == o->structure) known += " " + x.variant;
      usage("no structure '" + o->structure + "' with variant '" + o->variant + "'" +
            (known.empty() ? std::string(" (see --list)") : "; its variants:" + known));
    }
    if (!o->model.empty() && o->model != "all" && fc::find_model(o->model) == nullptr) {
      std::string known;
      for (const auto& m : fc::model_names()) known += " " + m;
      usage("unknown --model '" + o->model + "' (known:" + known + ", or all)");
    }
    if (o->crash_create)
      for (const auto& m : models_of(o->model, *s))
        if (auto why = fc::crash_create_needs_writeback(m); !why.empty())
          usage(why + (o->model == "all" ? "; give --model abstract or x86" : ""));
    if (o->mutate_seeds != 1 && !o->mutate) usage("--mutate-seeds needs --mutate");
    if (!o->mutate_only.empty() && !o->mutate) usage("--mutate-only needs --mutate");
    if (o->mutate) run_mutate(*o, *s);
    std::uint64_t violations = 0, inconclusive = 0;
    std::string error;
    Json out = Json::array();
    for (const auto& model : models_of(o->model, *s)) {
      Opts one = *o;
      one.model = model;
      fc::CampaignConfig cfg = config_of(one);
      fc::CampaignResult r;
      try {
        r = fc::run_campaign(*s, cfg);
      } catch (const std::invalid_argument& e) {
        usage(e.what());
      }
      if (o->json) {
        Json j = to_json(*s, r);
        if (cfg.replay) j["replay_reached"] = r.replay_reached;
        out.push_back(std::move(j));
      } else {
        print_text(r);
        if (cfg.replay && !r.replay_reached)
          std::printf("  crash point %llu (image %d) was not reached (the run issued %llu verbs)\n",
                      static_cast<unsigned long long>(cfg.replay->k), cfg.replay->image,
                      static_cast<unsigned long long>(r.verbs));
      }
      violations += r.violations;
      inconclusive += r.inconclusive;
      if (!r.error.empty() && error.empty()) error = r.error;
    }
    if (o->json) std::printf("%s\n", (out.size() == 1 ? out[0] : out).dump(2).c_str());
    if (!error.empty()) {
      std::fprintf(stderr, "ferrite crashtest: %s\n", error.c_str());
      throw ferrite::cli::Exit{1};
    }
    // Exit codes: 0 every image checked and none violated; 1 a violation
    // (or an error); 3 no violation but some image was inconclusive (the
    // checker ran out of budget): never a pass; 2 usage.
    if (violations > 0) throw ferrite::cli::Exit{1};
    if (inconclusive > 0) {
      std::fprintf(stderr, "ferrite crashtest: %llu image(s) inconclusive: not a pass (exit 3)\n",
                   static_cast<unsigned long long>(inconclusive));
      throw ferrite::cli::Exit{3};
    }
    throw ferrite::cli::Exit{0};
  });
}

}  // namespace

FERRITE_REGISTER_COMMAND(crashtest, "Crash campaigns: crash a structure at every persistence verb and check recovery",
                         setup_crashtest);
