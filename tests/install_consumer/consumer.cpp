// Built against an installed Ferrite by scripts/test-install.sh.
#include <ferrite/persist/persist.h>
#include <ferrite/sync/thread_registry.h>

#include <cstdio>

int main() {
  alignas(64) static char buf[128];
  ferrite::persist::reset_counters();
  ferrite::persist::pwb(buf, sizeof buf);
  ferrite::persist::psync();
  ferrite::sync::ThreadRegistry reg(2);
  auto h = reg.acquire();
  const auto pwbs = ferrite::persist::counters()[ferrite::persist::Verb::kPwb];
  std::printf("consumer: pwb=%llu id=%d\n", static_cast<unsigned long long>(pwbs), h.id());
  return pwbs == 2 && h.id() == 0 ? 0 : 1;
}
