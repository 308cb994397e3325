// Persistency models: the registry, image numbering (images_for, image_at)
// and CrashState's encoding. The models themselves: model_writeback.cc
// (abstract, x86) and model_store.cc (hops, hops+, strand).
#include "ferrite/crash/model.h"
#include "wire.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

namespace ferrite::crash {

namespace models {
// model_writeback.cc
const Model& abstract();
const Model& x86();
// model_store.cc
const Model& hops();
const Model& hops_plus();
const Model& strand();
}  // namespace models

namespace {

constexpr std::size_t kL = persist::kCacheLine;

const std::vector<const Model*>& registry() {
  static const std::vector<const Model*> kAll = [] {
    std::vector<const Model*> v{&models::abstract(), &models::x86(), &models::hops(), &models::hops_plus(),
                                &models::strand()};
    std::sort(v.begin(), v.end(), [](const Model* a, const Model* b) { return a->name() < b->name(); });
    return v;
  }();
  return kAll;
}

using wire::splitmix;

std::uint64_t hash_lines(const std::vector<Line>& lines) {
  std::uint64_t h = 0x51ed2701;
  for (const auto& l : lines) {
    std::uint64_t words[kL / 8];
    std::memcpy(words, l.data(), kL);
    for (auto w : words) {
      h ^= w + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      splitmix(h);
    }
  }
  return h;
}

Image make(int index, std::vector<Line> lines, std::string how) {
  Image img;
  img.index = index;
  img.lines = std::move(lines);
  img.how = std::move(how);
  img.hash = hash_lines(img.lines);
  return img;
}

Image fixed(const CrashState& cs, int index) {
  return index == kImageAllLost ? make(index, cs.media, "all pending write-backs and dirty lines lost (media only)")
                                : make(index, cs.working, "everything persisted (working memory)");
}

// How many enumerated images images_for builds (0: it samples).
std::uint64_t enumeration_size(const ImageSpace& sp, const ImageOptions& opt) {
  const double cap = std::min<double>(static_cast<double>(opt.enumerate_max), INT_MAX / 2);
  if (sp.optional_lines > opt.enumerate_lines || !(sp.choices <= cap)) return 0;
  return static_cast<std::uint64_t>(sp.choices);
}

Image sampled(const ImageSpace& sp, int index, std::uint64_t seed) {
  std::string how;
  auto lines = sp.sampled(index, seed, &how);
  return make(index, std::move(lines), std::move(how));
}

Image enumerated(const ImageSpace& sp, std::uint64_t c, std::uint64_t n) {
  std::string how;
  auto lines = sp.enumerated(c, &how);
  return make(static_cast<int>(2 + c), std::move(lines),
              "enumerated " + std::to_string(c + 1) + "/" + std::to_string(n) + ": " + how);
}

}  // namespace

const Model* find_model(std::string_view name) {
  for (const Model* m : registry())
    if (m->name() == name) return m;
  return nullptr;
}

std::vector<std::string> model_names() {
  std::vector<std::string> v;
  for (const Model* m : registry()) v.emplace_back(m->name());
  return v;
}

std::vector<std::string> writeback_model_names() { return {"abstract", "x86"}; }

std::vector<std::string> store_model_names() { return {"hops", "hops+", "strand"}; }

std::string crash_create_needs_writeback(std::string_view model) {
  const auto stores = store_model_names();
  if (std::find(stores.begin(), stores.end(), model) == stores.end()) return {};
  return "crash campaign: crashes during creation need a write-back model (abstract or x86): pool and structure "
         "creation persist through pwb and psync, which the store model '" +
         std::string(model) + "' does not execute (it persists annotated stores only)";
}

CrashState capture_state(const Machine& m, const ModelRun& run, std::string_view model, std::uint64_t k) {
  CrashState cs;
  cs.model = std::string(model);
  cs.k = k;
  cs.size = m.size();
  for (std::size_t off = 0; off + kL <= m.size(); off += kL)
    if (std::memcmp(m.working() + off, m.media() + off, kL) != 0) cs.lines.push_back(off);
  run.capture(cs);
  std::sort(cs.lines.begin(), cs.lines.end());
  cs.lines.erase(std::unique(cs.lines.begin(), cs.lines.end()), cs.lines.end());
  const std::size_t n = cs.lines.size();
  cs.media.resize(n);
  cs.working.resize(n);
  cs.dirty.resize(n);
  cs.declared.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    std::memcpy(cs.media[i].data(), m.media() + cs.lines[i], kL);
    std::memcpy(cs.working[i].data(), m.working() + cs.lines[i], kL);
    cs.dirty[i] = cs.media[i] != cs.working[i];
  }
  run.capture_lines(cs);
  return cs;
}

std::unique_ptr<ImageSpace> image_space(const CrashState& cs, const ImageOptions& opt) {
  const Model* m = find_model(cs.model);
  if (m == nullptr) throw std::invalid_argument("crash state from an unknown persistency model '" + cs.model + "'");
  return m->space(cs, opt);
}

ImageSet images_for(const CrashState& cs, int random, std::uint64_t seed, const ImageOptions& opt) {
  const auto sp = image_space(cs, opt);
  ImageSet set;
  set.optional_lines = sp->optional_lines;
  std::unordered_set<std::uint64_t> seen;
  auto add = [&](Image img) {
    ++set.built;
    if (seen.insert(img.hash).second) set.images.push_back(std::move(img));
  };
  add(fixed(cs, kImageAllLost));
  add(fixed(cs, kImageAllPersisted));
  const std::uint64_t n = enumeration_size(*sp, opt);
  for (std::uint64_t c = 0; c < n; ++c) add(enumerated(*sp, c, n));
  set.enumerated = n > 0;
  set.exhaustive = n > 0 && sp->complete;
  if (!set.exhaustive)
    for (int r = 0; r < random; ++r) add(sampled(*sp, static_cast<int>(2 + n) + r, seed));
  if (set.exhaustive) {
    set.possible = static_cast<double>(set.images.size());
    set.possible_exact = true;
  } else {
    set.possible = std::max(sp->possible, static_cast<double>(set.images.size()));
    set.possible_exact = sp->possible_exact;
  }
  return set;
}

std::optional<Image> image_at(const CrashState& cs, int index, std::uint64_t seed, const ImageOptions& opt) {
  if (index < 0) return std::nullopt;
  if (index == kImageAllLost || index == kImageAllPersisted) return fixed(cs, index);
  const auto sp = image_space(cs, opt);
  const std::uint64_t n = enumeration_size(*sp, opt);
  const auto c = static_cast<std::uint64_t>(index - 2);
  if (c < n) return enumerated(*sp, c, n);
  if (n > 0 && sp->complete) return std::nullopt;
  return sampled(*sp, index, seed);
}

Image build_image(const CrashState& cs, int index, std::uint64_t seed, const ImageOptions& opt) {
  if (auto img = image_at(cs, index, seed, opt)) return std::move(*img);
  return sampled(*image_space(cs, opt), index, seed);
}

// ------------------------------------------------------------ CrashState I/O

namespace {

constexpr std::uint64_t kMagic = 0x3153'4341'5243'4546ull;  // "FECRACS1"

void put(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
void put64(std::string& out, std::uint64_t v) { put(out, &v, 8); }

struct In {
  std::string_view s;
  std::size_t at = 0;
  void get(void* p, std::size_t n) {
    if (s.size() - at < n) throw std::invalid_argument("CrashState::deserialize: truncated encoding");
    std::memcpy(p, s.data() + at, n);
    at += n;
  }
  std::uint64_t u64() {
    std::uint64_t v;
    get(&v, 8);
    return v;
  }
  // A count of items of at least `min_bytes` each (bounded by what is left).
  std::size_t count(std::size_t min_bytes) {
    const std::uint64_t n = u64();
    if (n > (s.size() - at) / std::max<std::size_t>(min_bytes, 1))
      throw std::invalid_argument("CrashState::deserialize: malformed count");
    return static_cast<std::size_t>(n);
  }
};

}  // namespace

void CrashState::serialize(std::string& out) const {
  const std::size_t n = lines.size();
  if (media.size() != n || working.size() != n || dirty.size() != n || (!declared.empty() && declared.size() != n))
    throw std::logic_error("CrashState::serialize: per-line vectors differ in length");
  put64(out, kMagic);
  put64(out, model.size());
  put(out, model.data(), model.size());
  put64(out, k);
  put64(out, size);
  put64(out, n);
  put64(out, declared.empty() ? 0 : 1);
  for (std::size_t i = 0; i < n; ++i) {
    put64(out, lines[i]);
    put(out, media[i].data(), kL);
    put(out, working[i].data(), kL);
    const std::uint8_t flags[2] = {static_cast<std::uint8_t>(dirty[i] ? 1 : 0), declared.empty() ? std::uint8_t{0} : declared[i]};
    put(out, flags, 2);
  }
  put64(out, pending.size());
  for (const auto& p : pending) {
    put64(out, p.offset);
    put64(out, p.k);
    put(out, &p.thread, 4);
    put(out, &p.epoch, 4);
    put(out, &p.declared, 1);
    put(out, p.data.data(), kL);
  }
  put64(out, epochs.size());
  for (auto e : epochs) put(out, &e, 4);
  put64(out, model_data.size());
  for (auto w : model_data) put64(out, w);
}

CrashState CrashState::deserialize(std::string_view s) {
  In in{s};
  if (in.u64() != kMagic) throw std::invalid_argument("CrashState::deserialize: not a crash state");
  CrashState cs;
  cs.model.resize(in.count(1));
  in.get(cs.model.data(), cs.model.size());
  cs.k = in.u64();
  cs.size = static_cast<std::size_t>(in.u64());
  const std::size_t n = in.count(8 + 2 * kL + 2);
  const bool has_declared = in.u64() != 0;
  cs.lines.resize(n);
  cs.media.resize(n);
  cs.working.resize(n);
  cs.dirty.resize(n);
  cs.declared.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    cs.lines[i] = in.u64();
    in.get(cs.media[i].data(), kL);
    in.get(cs.working[i].data(), kL);
    std::uint8_t flags[2];
    in.get(flags, 2);
    cs.dirty[i] = flags[0] != 0;
    cs.declared[i] = flags[1];
  }
  if (!has_declared) cs.declared.clear();
  cs.pending.resize(in.count(8 + 8 + 4 + 4 + 1 + kL));
  for (auto& p : cs.pending) {
    p.offset = in.u64();
    p.k = in.u64();
    in.get(&p.thread, 4);
    in.get(&p.epoch, 4);
    in.get(&p.declared, 1);
    in.get(p.data.data(), kL);
  }
  cs.epochs.resize(in.count(4));
  for (auto& e : cs.epochs) in.get(&e, 4);
  cs.model_data.resize(in.count(8));
  for (auto& w : cs.model_data) w = in.u64();
  if (in.at != s.size()) throw std::invalid_argument("CrashState::deserialize: trailing bytes");
  return cs;
}

}  // namespace ferrite::crash
