/* segv_backtrace.c: LD_PRELOAD it into a process that crashes to get the native stack on stderr.
 *
 *   cc -shared -fPIC -o /tmp/segv_backtrace.so tests/cuda/tools/segv_backtrace.c
 *   LD_PRELOAD=/tmp/segv_backtrace.so python3 -m pytest ...
 *
 * A debugging aid for GPU runs, where no debugger is at hand (Python's faulthandler shows only Python
 * frames). On SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT it writes glibc's backtrace (file(+offset) per
 * frame: addr2line -f -C -e FILE OFFSET names them) and each mapped object's load address, then re-raises
 * the signal with the default action so that the exit status and any other handler's output stay as they
 * would be. Python's faulthandler, installed later, chains to this handler. */
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_fatal(int sig) {
  static const char head[] = "\n=== segv_backtrace: native stack ===\n";
  void* frames[128];
  const int n = backtrace(frames, 128);
  write(2, head, sizeof head - 1);
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

__attribute__((constructor)) static void install(void) {
  static char stack[1 << 16];
  stack_t ss;
  memset(&ss, 0, sizeof ss);
  ss.ss_sp = stack;
  ss.ss_size = sizeof stack;
  sigaltstack(&ss, NULL);
  const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
  for (unsigned i = 0; i < sizeof sigs / sizeof sigs[0]; ++i) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal;
    sa.sa_flags = SA_ONSTACK | SA_RESETHAND;
    sigaction(sigs[i], &sa, NULL);
  }
}
