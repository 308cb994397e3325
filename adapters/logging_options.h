// adapters/logging_options.h — run-time settings of the logging workloads'
// adapter (logging_adapter.h) that the tools set before they build a
// workload: `--commit-batch` of `ferrite trace`, `ferrite sim --paper` and
// `ferrite crashtest`.
//
// Thread safety: set before the workloads are built (a campaign's workers
// are forked after it); read by every thread that builds one.
#pragma once

#include <atomic>
#include <cstddef>

namespace ferrite::adapters {

// ATLAS / SFR workloads: logging::LoggerOptions::commit_batch (1: each
// region's log is pruned at its end, before the unlock; N > 1: batched
// commits after the unlock, StrandWeaver §VI). Transactions ignore it.
inline std::atomic<std::size_t>& logging_commit_batch() {
  static std::atomic<std::size_t> batch{1};
  return batch;
}
// `--commit-batch N`'s range and help, one text for every tool that takes it.
inline constexpr std::size_t kMaxCommitBatch = 512;
inline constexpr const char* kCommitBatchHelp =
    "Logging workloads (ATLAS and SFR): regions per batched log commit (default 1: each region's log is pruned at "
    "its end, before the unlock; N > 1: after the unlock, N regions at a time, StrandWeaver §VI; docs/logging.md)";

}  // namespace ferrite::adapters
