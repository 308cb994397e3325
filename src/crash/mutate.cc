// Mutation testing of persistence call sites (crash/mutate.h).
#include "ferrite/crash/mutate.h"

#include <chrono>

namespace ferrite::crash {

MutationResult run_mutation(const SubjectInfo& subject, const CampaignConfig& cfg_in,
                            const std::function<void(std::size_t, std::size_t, const SiteVerdict&)>& progress) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  MutationResult m;
  m.structure = subject.structure;
  m.variant = subject.variant;
  m.model = cfg_in.model;
  CampaignConfig cfg = cfg_in;
  cfg.mutate_sites.clear();
  cfg.replay.reset();
  // The unmutated campaign: it must pass, and it tells which sites exist.
  sites::enable();
  sites::set_suppressed({});
  sites::clear_hits();
  m.baseline = run_campaign(subject, cfg);
  const auto reached = sites::reached();
  if (!m.baseline.error.empty()) {
    m.error = "the unmutated campaign failed: " + m.baseline.error;
  } else if (m.baseline.violations > 0 || m.baseline.inconclusive > 0) {
    m.error = "the unmutated campaign does not pass (" + std::to_string(m.baseline.violations) + " violation(s), " +
              std::to_string(m.baseline.inconclusive) + " inconclusive): mutation needs a passing baseline";
  }
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
    const auto t0 = Clock::now();
    sites::clear_hits();
    CampaignResult r;
    try {
      r = run_campaign(subject, mut);
    } catch (const std::exception& e) {
      r.error = e.what();
    }
    v.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    v.suppressed = sites::suppressed_count();
    v.images = r.images_checked;
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
