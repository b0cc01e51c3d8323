// Keeps lockstep-launcher's glibc floor at 2.35 (Ubuntu 22.04 images) rather than 2.36: the static
// libstdc++ of GCC 12 references arc4random (std::random_device, via its COW-string shims), which
// glibc only exports from 2.36. This definition, linked into the executable only, satisfies that
// reference from the kernel's getrandom(2) (glibc 2.25), so no GLIBC_2.36 symbol is imported.
#include <sys/random.h>

#include <cerrno>
#include <cstdint>

extern "C" uint32_t arc4random() noexcept {
  uint32_t value = 0;
  for (;;) {
    const ssize_t n = getrandom(&value, sizeof(value), 0);
    if (n == static_cast<ssize_t>(sizeof(value))) return value;
    if (n < 0 && errno != EINTR) return value;  // cannot happen for 4 bytes after boot
  }
}
