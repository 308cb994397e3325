// adapters/montage_common.h — what the nbMontage adapters share: the epoch
// options a structure gets under the crash simulator and in the benchmark.
#pragma once

#include <chrono>

#include "adapter.h"
#include "ferrite/montage/epoch_sys.h"
#include "ferrite/pmem/pool.h"

namespace ferrite::adapters {

inline montage::EpochOptions montage_epoch_options(pmem::Pool& pool, const Setup& s) {
  montage::EpochOptions o;
  // `ferrite bench --sync-every N`: the workers' syncs alone advance the
  // epoch (the nbMontage paper §5.3 disables the background advance for
  // its sync-latency and sync-frequency measurements, Figures 5 and 6).
  if (s.sync_every > 0) o.epoch_length = std::chrono::microseconds{0};
  if (pool.backend().kind == persist::BackendConfig::Kind::kSim) {
    // Epochs advance only on sync under the simulator (no background
    // advancer: a campaign's run is then one seed, one history).
    o.epoch_length = std::chrono::microseconds{0};
    // Small buffers: full-buffer write-backs (Fig. 2 l.8–10) happen in the
    // campaigns, and they are verbs, so the scheduler can stop a thread
    // between tagging its payloads and its DCSS (an epoch advance then
    // dooms the attempt: the case recovery rule 2 exists for).
    o.tbp_capacity = 4;
    // Two recovery threads classify the blocks (the scan only reads the
    // pool), so the campaigns recover with the parallel scan.
    o.recovery_threads = 2;
  }
  return o;
}

}  // namespace ferrite::adapters
