// adapters/montage_bytes_queue.cc — nbMontage's queue of byte strings
// (include/ferrite/montage/bytes_queue.h: the Michael–Scott queue over
// payloads {serial, length, value bytes}) and its broken variants.
//
// Each workload value v is enqueued as bytes::encode_value(v, setup) — a
// string whose size is drawn from the campaign's `--value-size A..B`
// (default here: 8..512; a bench run's --value-size N other than 8 gives
// fixed N-byte values) — and what dequeue and observe read back is decoded
// with bytes::decode_value: any byte mismatch, and any payload that fails
// validation (the read throws), is bytes::kCorrupt, which no workload
// writes, so the checker reports it. Buffered durably linearizable; the
// crash workload is montage-queue's (a sync about every 8th operation).
// Epochs as in montage_queue.cc: only on sync under the simulator.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapter.h"
#include "bytes_codec.h"
#include "montage_common.h"
#include "ferrite/montage/bytes_queue.h"

namespace adapter_montage_bytes_queue {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fm = ferrite::montage;
namespace fb = ferrite::adapters::bytes;
namespace mf = ferrite::montage::fault;
namespace op = ferrite::op;

constexpr const char* kName = "montage-bytes-queue";

fa::Setup with_sizes(const fa::Setup& s) { return fb::with_sizes(s, {8, 8}, {8, 512}); }

template <unsigned F>
struct MontageBytesQueue {
  using Queue = fm::BytesQueue<F>;
  struct Handle {
    std::unique_ptr<Queue> q;
    fa::Setup setup;
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kQueue;
  static constexpr bool kDetectable = false;
  static constexpr bool kBuffered = true;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return {Queue::create(*pool, s.name, s.threads, fa::montage_epoch_options(*pool, s)), with_sizes(s)};
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return {Queue::attach(pool, s.name, s.threads, fa::montage_epoch_options(pool, s)), with_sizes(s)};
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t, const op::Op& o) {
    switch (o.kind) {
      case op::kEnqueue: h.q->enqueue(tid, fb::encode_value(o.arg, h.setup)); return op::Response::ack();
      case op::kDequeue: {
        std::optional<std::string> b;
        try {
          b = h.q->dequeue(tid);
        } catch (const ferrite::pmem::PoolError& e) {
          if (e.code() != ferrite::pmem::Errc::kCorrupt) throw;
          return op::Response::of(fb::kCorrupt);  // a payload that fails validation
        }
        if (!b) return op::Response::none();
        return op::Response::of(fb::decode_value(*b, h.setup));
      }
      case op::kSync: h.q->sync(); return op::Response::ack();
      default: fa::unsupported(kName, o);
    }
  }
  // Reads only: front to back, each payload validated and decoded
  // (kCorrupt for a damaged one).
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::int64_t> out;
    try {
      for (const std::string& b : h.q->contents()) out.push_back(fb::decode_value(b, h.setup));
    } catch (const ferrite::pmem::PoolError&) {
      out.push_back(fb::kCorrupt);
    }
    return out;
  }
  static op::Op next_op(int tid, std::uint64_t& rng, fa::Workload& w) {
    if (fa::Workload::step(rng) % 8 == 0) return {op::kSync, 0, 0};
    return w.next_op(kAbstract, tid, rng);
  }
};

// Campaign pools of 8 MiB (a 64 KiB slab per thread and size class).
constexpr std::size_t kCampaignPool = std::size_t{8} << 20;

fa::Registration broken(const char* variant, const char* why) {
  return {.technique = kName, .variant = variant, .family = "montage", .origin = fa::Origin::kFerrite,
          .broken = true, .description = why, .crash_pool_size = kCampaignPool};
}

}  // namespace

FERRITE_REGISTER_ADAPTER(MontageBytesQueue<mf::kNone>,
                         fa::Registration{.technique = kName, .family = "montage", .origin = fa::Origin::kFerrite,
                                          .description = "nbMontage Michael-Scott queue of byte strings ({serial, "
                                                         "length, bytes} payloads; buffered durable "
                                                         "linearizability, DISC'21 §5)",
                                          .byte_strings = true, .crash_pool_size = kCampaignPool,
                                          .pool_size = std::size_t{1} << 30});
FERRITE_REGISTER_ADAPTER(MontageBytesQueue<mf::kNoPayloadWriteback>,
                         broken("no-payload-writeback",
                                "the to-be-persisted buffers write back a payload's header line only: its epoch "
                                "becomes durable with the value bytes still in the cache"));
FERRITE_REGISTER_ADAPTER(MontageBytesQueue<mf::kFreeOnDetach>,
                         broken("free-on-detach",
                                "a dequeued payload is returned to the allocator at the dequeue, not when EBR frees "
                                "its node and pdelete's epoch delay has passed (recovery may still need it)"));
FERRITE_REGISTER_ADAPTER(MontageBytesQueue<mf::kIgnoreAnti>,
                         broken("ignore-anti", "recovery ignores anti-nodes: dequeued values come back (§3.4 rule 3)"));

}  // namespace adapter_montage_bytes_queue
