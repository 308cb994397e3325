// adapters/pb_bytes_stack.cc — PBBytesStack (include/ferrite/combining/
// pb_bytes_stack.h), the PBstack of byte strings, and its broken variants.
//
// Each workload value v is pushed as bytes::encode_value(v, setup) — a
// string whose size is drawn from the campaign's `--value-size A..B`
// (default here: 8..512; a bench run's --value-size N other than 8 gives
// fixed N-byte elements) — and what pop and observe read back is decoded
// with bytes::decode_value: any byte mismatch, and any payload that fails
// validation (the read throws), is bytes::kCorrupt, which no workload
// writes, so the checker reports it. Detectable (the structure's seq API:
// recover_push / recover_pop), like pb-stack.
#include <optional>
#include <string>
#include <utility>

#include "adapter.h"
#include "bytes_codec.h"
#include "combining.h"
#include "ferrite/combining/pb_bytes_stack.h"

namespace adapter_pb_bytes_stack {  // this file's names, apart in a unity build

namespace {

namespace fa = ferrite::adapters;
namespace fc = ferrite::combining;
namespace fb = ferrite::adapters::bytes;
namespace bf = ferrite::combining::bytes_fault;
namespace op = ferrite::op;

// The sizes this adapter encodes with (see the file comment; a stack has no
// keys).
fa::Setup with_sizes(const fa::Setup& s) { return fb::with_sizes(s, {8, 8}, {8, 512}); }

template <unsigned BF>
struct PBBytesStack {
  using Stack = fc::PBBytesStack<fc::kNoFaults, BF>;
  struct Handle {
    std::unique_ptr<Stack> s;
    fa::Setup setup;  // the sizes the values are encoded with
  };
  static constexpr op::Abstract kAbstract = op::Abstract::kStack;
  static constexpr bool kDetectable = true;

  static Handle create(ferrite::pmem::Pool* pool, const fa::Setup& s) {
    return {Stack::create(*pool, s.name, s.threads), with_sizes(s)};
  }
  static Handle attach(ferrite::pmem::Pool& pool, const fa::Setup& s) {
    return {Stack::attach(pool, s.name, s.threads), with_sizes(s)};
  }
  static op::Response answer(const std::optional<std::string>& b, const fa::Setup& s) {
    return b ? op::Response::of(fb::decode_value(*b, s)) : op::Response::none();
  }
  template <class F>
  static op::Response pop_with(Handle& h, const F& pop) {
    try {
      return answer(pop(), h.setup);
    } catch (const ferrite::pmem::PoolError&) {
      return op::Response::of(fb::kCorrupt);  // a payload that fails validation
    }
  }
  static op::Response apply(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    switch (o.kind) {
      case op::kPush: h.s->push(tid, seq, fb::encode_value(o.arg, h.setup)); return op::Response::ack();
      case op::kPop: return pop_with(h, [&] { return h.s->pop(tid, seq); });
      default: fa::unsupported("pb-bytes-stack", o);
    }
  }
  static op::Response recover(Handle& h, int tid, std::uint64_t seq, const op::Op& o) {
    switch (o.kind) {
      case op::kPush: h.s->recover_push(tid, seq, fb::encode_value(o.arg, h.setup)); return op::Response::ack();
      case op::kPop: return pop_with(h, [&] { return h.s->recover_pop(tid, seq); });
      default: fa::unsupported("pb-bytes-stack", o);
    }
  }
  // Reads only: the offsets top -> bottom, each payload validated and
  // decoded (kCorrupt for a damaged one, or a list that breaks).
  static std::vector<std::int64_t> observe(Handle& h) {
    std::vector<std::int64_t> out;
    std::vector<std::uint64_t> offs;
    try {
      offs = h.s->payload_offsets();
    } catch (const ferrite::pmem::PoolError&) {
      return {fb::kCorrupt};
    }
    for (std::uint64_t off : offs) {
      try {
        out.push_back(fb::decode_value(ferrite::pmem::read_payload(*h.s->pool(), off), h.setup));
      } catch (const ferrite::pmem::PoolError&) {
        out.push_back(fb::kCorrupt);
      }
    }
    return out;
  }
  static double combining_degree(const Handle& h) { return h.s->combining_degree(); }
};

}  // namespace

// Campaign pools of at least 4 MiB (per-thread arenas take a 64 KiB chunk
// per payload size class: adapters/pb_bytes_queue.cc); byte strings.
fa::Registration bytes_stack(fa::Registration r) {
  r.crash_pool_size = std::size_t{4} << 20;
  r.byte_strings = true;
  return r;
}

FERRITE_REGISTER_ADAPTER(PBBytesStack<bf::kNone>,
                         bytes_stack(fa::ferrite_technique("pb-bytes-stack", "pbcomb",
                                           "PBstack of byte strings: payload offsets as values, payload psync "
                                           "before publication, reclamation after the popper's next operation")));
FERRITE_REGISTER_ADAPTER(PBBytesStack<bf::kNoPayloadPsync>,
                         bytes_stack(fa::ferrite_broken("pb-bytes-stack", "pbcomb", "no-payload-psync",
                                        "the payload's offset is announced without the psync after "
                                        "write_payload (payload.h P1)")));
FERRITE_REGISTER_ADAPTER(PBBytesStack<bf::kFreeAtReturn>,
                         bytes_stack(fa::ferrite_broken("pb-bytes-stack", "pbcomb", "free-at-return",
                                        "a popped payload is freed when the pop returns, while the durable "
                                        "response still names it")));

}  // namespace adapter_pb_bytes_stack
