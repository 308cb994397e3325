// ferrite/crash/sites.h — persistence call sites: which lines of code issued
// verbs under the crash simulator, and suppressing one of them at run time
// (the mutation testing of `ferrite crashtest --mutate`, docs/crash.md §6).
//
// A site is one verb call in the source: file, line, column and verb, from
// the std::source_location every verb takes by default (persist/persist.h).
// Wrappers pass their caller's location on (persist_range, LineWriteback),
// so a site is always a line of an algorithm, never of persist/.
//
// The table is shared memory created by enable(): the processes a campaign
// forks later (its workers, which run recovery and the post-recovery
// operations) record into it and obey the same suppression. Only the crash
// simulator's backend consults it; hardware backends never do.
//
// Thread safety: enable(), set_suppressed(), clear() and reached() are
// called by one controlling thread while no campaign runs; the hook and
// set_phase() may run in any thread of any process.
#pragma once

#include <array>
#include <cstdint>
#include <source_location>
#include <string>
#include <vector>

#include "ferrite/persist/persist.h"

namespace ferrite::crash::sites {

// What the process was doing when the verb was issued.
enum class Phase : std::uint8_t { kCreate = 0, kRun, kRecover, kPost, kCount };
inline constexpr int kPhases = static_cast<int>(Phase::kCount);
const char* phase_name(Phase p);

struct Site {
  std::string file;      // from the source root ("include/ferrite/combining/pbcomb.h")
  std::string function;  // as the compiler names it
  std::uint32_t line = 0, column = 0;
  persist::Verb verb = persist::Verb::kPwb;
  std::array<std::uint64_t, kPhases> hits{};  // verbs issued (or suppressed) from it, per phase
  // "FILE:LINE:COL:VERB", the form --mutate-site accepts.
  std::string id() const;
};

// Creates the shared table (idempotent). Until then nothing is recorded.
void enable();
bool enabled();
// Forgets every hit count (the sites stay known).
void clear_hits();
// Every site with at least one hit, sorted by file, line, column, verb.
std::vector<Site> reached();

// Verbs whose site matches one of `specs` are suppressed (not issued). A
// spec is "FILE:LINE[:COL][:VERB]"; FILE matches the end of a site's path at
// a '/' ("pbcomb.h" or "combining/pbcomb.h"), VERB is a verb name (pwb,
// pfence, psync, ...). Enables the table. Throws std::invalid_argument on a
// malformed spec. An empty list suppresses nothing.
void set_suppressed(const std::vector<std::string>& specs);
// Verbs suppressed since the last clear_hits(), in every process.
std::uint64_t suppressed_count();

// The calling process's phase (recorded with each hit).
void set_phase(Phase p);
Phase phase();

// The simulator backend's site hook (persist::Backend::site): records the
// site and returns false when it is suppressed.
bool on_site(const std::source_location& where, persist::Verb v);

}  // namespace ferrite::crash::sites
