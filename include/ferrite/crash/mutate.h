// ferrite/crash/mutate.h — mutation testing of persistence instructions:
// is every pwb, pfence and psync a structure issues both necessary and
// tested? (`ferrite crashtest --mutate`, docs/crash.md §6.)
//
// A passing crash campaign says nothing about the verbs it never needed.
// run_mutation() runs the campaign once unmutated, recording every call site
// the workload, creation, recovery and the post-recovery operations reach
// (crash/sites.h); then, for each site, runs the same campaign with that
// site's verbs suppressed at run time — no recompilation. A site whose
// suppression makes the campaign fail is `caught` (its first violation's
// replay line reproduces it, `--mutate-site` included); one whose
// suppression passes is `not caught`: either the instruction is redundant
// under the models the campaign checks, or the campaign is too weak to need
// it. Either is worth knowing.
//
// Thread safety: one mutation run (or campaign) per process at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ferrite/crash/campaign.h"
#include "ferrite/crash/sites.h"

namespace ferrite::crash {

struct SiteVerdict {
  sites::Site site;        // hits: from the unmutated run
  bool caught = false;     // the mutated campaign failed (a violation, or the campaign itself broke)
  std::string how;         // "violation", "error", "not caught", "not reached"
  std::string property;    // of the first violation
  std::string reason;      // the first violation's reason, or the error
  std::string replay;      // the first violation's replay line
  std::uint64_t suppressed = 0;  // verbs suppressed in the mutated run (0: the site was not reached)
  std::uint64_t images = 0;      // images checked in the mutated run
  std::uint64_t seed = 0;        // the seed of the campaign that caught it (or the last one tried)
  int seeds_tried = 0;           // campaigns run with this site suppressed
  double seconds = 0;
};

struct MutationResult {
  std::string structure, variant, model;
  CampaignResult baseline;  // the unmutated campaign (the first seed's)
  int seeds = 1;            // seeds per site: cfg.seed, cfg.seed + 1, ...
  std::vector<SiteVerdict> sites;
  std::size_t caught = 0;
  double seconds = 0;
  std::string error;  // the unmutated campaign failed, or something broke
};

// With `seeds` > 1 the unmutated campaign runs with each of the seeds
// cfg.seed .. cfg.seed + seeds - 1 (every one must pass; the sites are the
// union of what they reach), and a site is tried with one seed after the
// other until one catches it: several short workloads find more than one
// long one (a window such as "the first operations after create()" is
// crossed once per run). `progress(i, n, verdict)` after each site. Throws
// std::invalid_argument on a bad configuration (as run_campaign). With
// `only`, the sites it rejects are neither tried nor listed (a test about
// one structure's sites need not mutate the pool's allocator every time).
MutationResult run_mutation(const SubjectInfo& subject, const CampaignConfig& cfg,
                            const std::function<void(std::size_t, std::size_t, const SiteVerdict&)>& progress = {},
                            int seeds = 1, const std::function<bool(const sites::Site&)>& only = {});

}  // namespace ferrite::crash
