// Mutation testing of persistence call sites (crash/mutate.h).
#include "ferrite/crash/mutate.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>
#include <tuple>

namespace ferrite::crash {

MutationResult run_mutation(const SubjectInfo& subject, const CampaignConfig& cfg_in,
                            const std::function<void(std::size_t, std::size_t, const SiteVerdict&)>& progress,
                            int seeds, const std::function<bool(const sites::Site&)>& only) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  if (seeds < 1) throw std::invalid_argument("mutation: seeds must be at least 1");
  MutationResult m;
  m.structure = subject.structure;
  m.variant = subject.variant;
  m.model = cfg_in.model;
  m.seeds = seeds;
  CampaignConfig cfg = cfg_in;
  cfg.mutate_sites.clear();
  cfg.replay.reset();
  // The unmutated campaigns: each must pass, and together they tell which
  // sites exist (hits summed over the seeds).
  sites::enable();
  sites::set_suppressed({});
  std::map<std::string, sites::Site> found;
  for (int i = 0; i < seeds && m.error.empty(); ++i) {
    CampaignConfig b = cfg;
    b.seed = cfg.seed + static_cast<std::uint64_t>(i);
    sites::clear_hits();
    CampaignResult r = run_campaign(subject, b);
    for (auto& site : sites::reached()) {
      auto [it, fresh] = found.try_emplace(site.id(), site);
      if (!fresh)
        for (std::size_t p = 0; p < site.hits.size(); ++p) it->second.hits[p] += site.hits[p];
    }
    const std::string which = seeds > 1 ? " (seed " + std::to_string(b.seed) + ")" : "";
    if (!r.error.empty()) {
      m.error = "the unmutated campaign failed" + which + ": " + r.error;
    } else if (r.violations > 0 || r.inconclusive > 0) {
      m.error = "the unmutated campaign does not pass" + which + " (" + std::to_string(r.violations) +
                " violation(s), " + std::to_string(r.inconclusive) + " inconclusive): mutation needs a passing baseline";
    }
    if (i == 0 || !m.error.empty()) m.baseline = std::move(r);
  }
  std::vector<sites::Site> reached;
  for (auto& [id, site] : found)
    if (!only || only(site)) reached.push_back(std::move(site));
  std::sort(reached.begin(), reached.end(), [](const sites::Site& a, const sites::Site& b) {
    return std::tie(a.file, a.line, a.column, a.verb) < std::tie(b.file, b.line, b.column, b.verb);
  });
  if (!m.error.empty()) {
    m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return m;
  }
  // One campaign per site, that site's verbs suppressed; the first
  // violation is the verdict.
  CampaignConfig mut = cfg;
  mut.stop_after_violations = 1;
  mut.progress = nullptr;
  for (std::size_t i = 0; i < reached.size(); ++i) {
    SiteVerdict v;
    v.site = reached[i];
    mut.mutate_sites = {v.site.id()};
    // A site the baseline reached only in the run: crashes inside creation
    // cannot tell it apart (check_create_points, campaign.h).
    const auto hits = [&](sites::Phase p) { return v.site.hits[static_cast<std::size_t>(p)]; };
    mut.check_create_points = cfg.check_create_points && (hits(sites::Phase::kCreate) > 0 ||
                                                           hits(sites::Phase::kRecover) > 0 ||
                                                           hits(sites::Phase::kPost) > 0);
    const auto t0 = Clock::now();
    CampaignResult r;
    for (int k = 0; k < seeds; ++k) {
      mut.seed = cfg.seed + static_cast<std::uint64_t>(k);
      sites::clear_hits();
      r = CampaignResult{};
      try {
        r = run_campaign(subject, mut);
      } catch (const std::exception& e) {
        r.error = e.what();
      }
      v.seed = mut.seed;
      v.seeds_tried = k + 1;
      v.suppressed += sites::suppressed_count();
      v.images += r.images_checked;
      if (r.violations > 0 || !r.error.empty()) break;
    }
    v.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r.violations > 0 && !r.details.empty()) {
      v.caught = true;
      v.how = "violation";
      v.property = r.details.front().property;
      v.reason = r.details.front().reason;
      v.replay = r.details.front().replay;
    } else if (!r.error.empty()) {
      v.caught = true;
      v.how = "error";
      v.reason = r.error;
    } else {
      v.how = v.suppressed == 0 ? "not reached" : "not caught";
      if (r.inconclusive > 0) v.reason = std::to_string(r.inconclusive) + " inconclusive image(s)";
    }
    m.caught += v.caught ? 1 : 0;
    m.sites.push_back(std::move(v));
    if (progress) progress(i + 1, reached.size(), m.sites.back());
  }
  sites::set_suppressed({});
  sites::clear_hits();
  m.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return m;
}

}  // namespace ferrite::crash
