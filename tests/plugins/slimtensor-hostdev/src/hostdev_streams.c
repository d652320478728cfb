/* hostdev_streams.c: hostdev's streams (one worker thread each, delayed operations), current device and
 * stream per thread, and events.
 *
 * Note [hostdev streams]
 * A stream is a FIFO of operations run by its own worker thread. Before each copy, fill or strided copy the
 * worker sleeps SLIMTENSOR_HOSTDEV_DELAY_US plus a random jitter of up to SLIMTENSOR_HOSTDEV_JITTER_US, so
 * an operation queued on a stream has *not* run when the call that queued it returns, and the order in which
 * two streams run their work is not the order in which it was queued. Work on one stream runs in order; work
 * on two streams is ordered only by an event wait (stream_wait_event) or by the host waiting for the first
 * stream (synchronize_stream, synchronize, event_synchronize, a blocking host copy). So a core that forgets an
 * event wait or a synchronize reads stale data or has its writes land late, and a test sees it.
 *
 * Sequence numbers: every operation queued on a stream gets the next number (`enqueued`); the worker counts
 * the finished ones (`completed`). "The work queued so far" is enqueued at that moment; it has run when
 * completed reaches it. An event records (stream, number); waiting on it is waiting for that number.
 *
 * Streams are never destroyed (a stream handle stays valid until the process ends, as the ABI wants for
 * everything a plugin hands out); handles are tokens too: 0x5700000000000000 | id. Each device has a
 * default stream (its "legacy default", DLPack value 1), created on first use. The current stream of a
 * device is kept per thread (ST_STREAM_CURRENT resolves to it; the default stream until set), and so is
 * the current device (Note [Current device]; 0 until set).
 *
 * Note [hostdev DLPack streams]
 * hostdev's DLPack device type is kDLExtDev, and its streams have DLPack integers like CUDA's: 1 is the
 * device's default (legacy) stream, 2 the calling thread's per-thread default stream (one per thread and
 * device, created on first use and handed to a later thread once its thread has exited), and every other
 * stream is its id + 100. 0, -1 and other negative values name no stream (the core handles -1 and 0
 * before asking the plugin, as the DLPack spec says) and are refused.
 *
 * Errors of running operations (a conversion the core refused after all) are kept on their stream, as a
 * GPU keeps an asynchronous error, and reported by the next wait on that stream.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hostdev.h"

#define STREAM_TAG 0x5700000000000000ull
#define STREAM_TAG_MASK 0xff00000000000000ull
#define MAX_STREAMS 1024
#define MAX_EVENTS 4096
#define EVENT_TAG 0xe7e0000000000000ull
#define EVENT_TAG_MASK 0xfff0000000000000ull

typedef enum stream_kind { KIND_DEFAULT, KIND_CREATED, KIND_PER_THREAD } stream_kind;

typedef struct op_node {
  struct op_node* next;
  hd_op_args op;
} op_node;

struct hd_stream {
  int64_t id;
  int32_t device;
  stream_kind kind;
  int in_use; /* per-thread streams: held by a live thread (guarded by g_registry) */
  pthread_mutex_t mutex;
  pthread_cond_t work; /* the worker waits for operations */
  pthread_cond_t done; /* waiters for completions */
  op_node* head;
  op_node* tail;
  uint64_t enqueued, completed; /* guarded by mutex */
  int has_error;
  char error[400];
  uint64_t rng; /* the worker's own */
  pthread_t thread;
  _Atomic int64_t ops_queued, ops_run, ops_delayed, waits;
};

static pthread_mutex_t g_registry = PTHREAD_MUTEX_INITIALIZER;
static hd_stream* g_streams[MAX_STREAMS]; /* written under g_registry before g_stream_count publishes it */
static _Atomic int64_t g_stream_count;
static hd_stream* g_default[HOSTDEV_DEVICE_COUNT]; /* guarded by g_registry */

static _Atomic int64_t g_delay_us = -1, g_jitter_us = -1;

static _Thread_local int32_t t_device;                                   /* Note [Current device] */
static _Thread_local int64_t t_current[HOSTDEV_DEVICE_COUNT] = {-1, -1}; /* -1: the default stream */

/* ---- delays ---- */

static int64_t env_us(const char* name, int64_t fallback) {
  const char* text = getenv(name);
  if (!text || !*text) return fallback;
  char* end = NULL;
  long long v = strtoll(text, &end, 10);
  if (!end || *end != '\0' || v < 0 || v > 10000000) return fallback; /* at most 10 s */
  return (int64_t)v;
}

static void load_delays(void) {
  int64_t expected = -1;
  atomic_compare_exchange_strong(&g_delay_us, &expected, env_us(HOSTDEV_DELAY_ENV, HOSTDEV_DEFAULT_DELAY_US));
  expected = -1;
  atomic_compare_exchange_strong(&g_jitter_us, &expected, env_us(HOSTDEV_JITTER_ENV, HOSTDEV_DEFAULT_JITTER_US));
}

void hostdev_set_delay(int64_t delay_us, int64_t jitter_us) {
  atomic_store(&g_delay_us, delay_us < 0 ? 0 : delay_us);
  atomic_store(&g_jitter_us, jitter_us < 0 ? 0 : jitter_us);
}

void hostdev_get_delay(int64_t* delay_us, int64_t* jitter_us) {
  load_delays();
  *delay_us = atomic_load(&g_delay_us);
  *jitter_us = atomic_load(&g_jitter_us);
}

static void sleep_us(int64_t us) {
  struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

static uint64_t next_random(uint64_t* state) { /* xorshift64* */
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

/* ---- the worker ---- */

static void run_fill(unsigned char* d, uint64_t nbytes, const unsigned char* pattern, uint32_t size) {
  if (nbytes == 0) return;
  memcpy(d, pattern, size);
  uint64_t done = size;
  while (done < nbytes) { /* double the filled prefix */
    const uint64_t n = done < nbytes - done ? done : nbytes - done;
    memcpy(d + done, d, (size_t)n);
    done += n;
  }
}

static void run_op(hd_stream* s, hd_op_args* op) {
  switch (op->kind) {
    case HD_OP_COPY:
      if (op->nbytes) memmove(op->dst, op->src, (size_t)op->nbytes);
      break;
    case HD_OP_FILL: run_fill(op->dst, op->nbytes, op->pattern, op->pattern_size); break;
    case HD_OP_STRIDED:
      if (hostdev_strided_run(&op->strided)) hostdev_stream_fail(s, hostdev_last_error());
      break;
    case HD_OP_WAIT: {
      hd_stream* t = op->wait_for;
      pthread_mutex_lock(&t->mutex);
      while (t->completed < op->wait_seq) pthread_cond_wait(&t->done, &t->mutex);
      pthread_mutex_unlock(&t->mutex);
      atomic_fetch_add(&s->waits, 1);
      break;
    }
    case HD_OP_FREE: hostdev_memory_release(op->free_slot, s->device); break;
    case HD_OP_STALL: sleep_us(op->stall_us); break;
  }
}

static void* worker(void* arg) {
  hd_stream* s = (hd_stream*)arg;
  pthread_mutex_lock(&s->mutex);
  for (;;) {
    while (!s->head) pthread_cond_wait(&s->work, &s->mutex);
    op_node* n = s->head;
    s->head = n->next;
    if (!s->head) s->tail = NULL;
    pthread_mutex_unlock(&s->mutex);

    const hd_op_kind kind = n->op.kind;
    if (kind == HD_OP_COPY || kind == HD_OP_FILL || kind == HD_OP_STRIDED) {
      const int64_t delay = atomic_load(&g_delay_us), jitter = atomic_load(&g_jitter_us);
      const int64_t us = delay + (jitter > 0 ? (int64_t)(next_random(&s->rng) % (uint64_t)(jitter + 1)) : 0);
      if (us > 0) {
        sleep_us(us);
        atomic_fetch_add(&s->ops_delayed, 1);
      }
    }
    run_op(s, &n->op);
    for (int k = 0; k < n->op.nslots; ++k) hostdev_memory_unuse(n->op.slots[k]);
    if (kind == HD_OP_STRIDED) free(n->op.strided.sizes);
    free(n);
    atomic_fetch_add(&s->ops_run, 1);

    pthread_mutex_lock(&s->mutex);
    s->completed += 1;
    pthread_cond_broadcast(&s->done);
  }
  return NULL;
}

/* Creates a stream (g_registry held). NULL with the error set. */
static hd_stream* create_locked(int32_t index, stream_kind kind) {
  load_delays();
  const int64_t id = atomic_load(&g_stream_count);
  if (id >= MAX_STREAMS) {
    hostdev_fail("hostdev: cannot create another stream: hostdev keeps at most %d streams", MAX_STREAMS);
    return NULL;
  }
  hd_stream* s = calloc(1, sizeof *s);
  if (!s) {
    hostdev_fail("hostdev: out of host memory creating a stream");
    return NULL;
  }
  s->id = id;
  s->device = index;
  s->kind = kind;
  s->in_use = 1;
  s->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(id + 1) | 1u;
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->work, NULL);
  pthread_cond_init(&s->done, NULL);
  const int rc = pthread_create(&s->thread, NULL, worker, s);
  if (rc != 0) {
    pthread_cond_destroy(&s->done);
    pthread_cond_destroy(&s->work);
    pthread_mutex_destroy(&s->mutex);
    free(s);
    hostdev_fail("hostdev: could not start the worker thread of a new stream (pthread_create: %s)", strerror(rc));
    return NULL;
  }
  pthread_detach(s->thread);
  g_streams[id] = s;
  atomic_store(&g_stream_count, id + 1);
  return s;
}

hd_stream* hostdev_default_stream(int32_t index) {
  pthread_mutex_lock(&g_registry);
  hd_stream* s = g_default[index];
  if (!s) s = g_default[index] = create_locked(index, KIND_DEFAULT);
  pthread_mutex_unlock(&g_registry);
  return s;
}

hd_stream* hostdev_stream_create(int32_t index) {
  pthread_mutex_lock(&g_registry);
  hd_stream* s = create_locked(index, KIND_CREATED);
  pthread_mutex_unlock(&g_registry);
  return s;
}

hd_stream* hostdev_stream_by_id(int64_t id) {
  if (id < 0 || id >= atomic_load(&g_stream_count)) return NULL;
  return g_streams[id];
}

int64_t hostdev_stream_count(void) { return atomic_load(&g_stream_count); }
int64_t hostdev_stream_id(const hd_stream* s) { return s->id; }
int32_t hostdev_stream_device(const hd_stream* s) { return s->device; }
void* hostdev_stream_handle(const hd_stream* s) { return hostdev_stream_handle_for_id(s->id); }
void* hostdev_stream_handle_for_id(int64_t id) {
  return (void*)(uintptr_t)(STREAM_TAG | ((uint64_t)id & ~STREAM_TAG_MASK));
}

hd_stream* hostdev_current_stream(int32_t index) {
  const int64_t id = t_current[index];
  return id >= 0 ? hostdev_stream_by_id(id) : hostdev_default_stream(index);
}

int hostdev_set_current_stream(int32_t index, hd_stream* s) {
  if (s->device != index) {
    return hostdev_fail("hostdev set_current_stream(): stream %lld belongs to hostdev:%d, not hostdev:%d",
                        (long long)s->id, (int)s->device, (int)index);
  }
  t_current[index] = s->id;
  return 0;
}

int32_t hostdev_get_device(void) { return t_device; }
void hostdev_set_device(int32_t index) { t_device = index; }

/* Per-thread default streams: released to a pool when their thread exits. */
typedef struct per_thread {
  hd_stream* streams[HOSTDEV_DEVICE_COUNT];
} per_thread;
static pthread_key_t g_per_thread_key;
static pthread_once_t g_per_thread_once = PTHREAD_ONCE_INIT;
static _Thread_local per_thread* t_per_thread;

static void per_thread_exit(void* value) {
  per_thread* p = (per_thread*)value;
  pthread_mutex_lock(&g_registry);
  for (int d = 0; d < HOSTDEV_DEVICE_COUNT; ++d) {
    if (p->streams[d]) p->streams[d]->in_use = 0;
  }
  pthread_mutex_unlock(&g_registry);
  free(p);
}

static void per_thread_key_init(void) { pthread_key_create(&g_per_thread_key, per_thread_exit); }

hd_stream* hostdev_per_thread_stream(int32_t index) {
  pthread_once(&g_per_thread_once, per_thread_key_init);
  if (!t_per_thread) {
    per_thread* p = calloc(1, sizeof *p);
    if (!p) {
      hostdev_fail("hostdev: out of host memory for the per-thread default stream");
      return NULL;
    }
    if (pthread_setspecific(g_per_thread_key, p) != 0) {
      free(p);
      hostdev_fail("hostdev: could not keep the per-thread default stream (pthread_setspecific)");
      return NULL;
    }
    t_per_thread = p;
  }
  if (!t_per_thread->streams[index]) {
    pthread_mutex_lock(&g_registry);
    hd_stream* found = NULL;
    const int64_t n = atomic_load(&g_stream_count);
    for (int64_t i = 0; i < n && !found; ++i) {
      hd_stream* s = g_streams[i];
      if (s->kind == KIND_PER_THREAD && s->device == index && !s->in_use) found = s;
    }
    if (found)
      found->in_use = 1;
    else
      found = create_locked(index, KIND_PER_THREAD);
    pthread_mutex_unlock(&g_registry);
    t_per_thread->streams[index] = found;
  }
  return t_per_thread->streams[index];
}

hd_stream* hostdev_stream_resolve(const char* function, int32_t index, void* stream) {
  if (index < 0 || index >= HOSTDEV_DEVICE_COUNT) {
    hostdev_fail("hostdev %s(): device index %d is out of range; hostdev has devices 0..%d", function, (int)index,
                 HOSTDEV_DEVICE_COUNT - 1);
    return NULL;
  }
  if (stream == ST_STREAM_CURRENT) return hostdev_current_stream(index);
  const uint64_t h = (uint64_t)(uintptr_t)stream;
  hd_stream* s = (h & STREAM_TAG_MASK) == STREAM_TAG ? hostdev_stream_by_id((int64_t)(h & ~STREAM_TAG_MASK)) : NULL;
  if (!s) {
    hostdev_bad_handle(index, function,
                       "%p is not a hostdev stream (pass ST_STREAM_CURRENT or a stream from current_stream; NULL "
                       "is CUDA's legacy stream, not hostdev's)",
                       stream);
    return NULL;
  }
  if (s->device != index) {
    hostdev_bad_handle(index, function, "stream %lld belongs to hostdev:%d, but the call is for hostdev:%d",
                       (long long)s->id, (int)s->device, (int)index);
    return NULL;
  }
  return s;
}

int hostdev_read_stream_counters(int64_t id, hostdev_stream_counters* out) {
  hd_stream* s = hostdev_stream_by_id(id);
  if (!s) return 1;
  out->device = s->device;
  out->ops_queued = atomic_load(&s->ops_queued);
  out->ops_run = atomic_load(&s->ops_run);
  out->ops_delayed = atomic_load(&s->ops_delayed);
  out->waits = atomic_load(&s->waits);
  return 0;
}

/* ---- queueing and waiting ---- */

int hostdev_enqueue(hd_stream* s, const hd_op_args* op, uint64_t* seq) {
  op_node* n = malloc(sizeof *n);
  if (!n) {
    for (int k = 0; k < op->nslots; ++k) hostdev_memory_unuse(op->slots[k]);
    if (op->kind == HD_OP_STRIDED) free(op->strided.sizes);
    return hostdev_fail("hostdev: out of host memory queueing an operation on stream %lld", (long long)s->id);
  }
  n->next = NULL;
  n->op = *op;
  pthread_mutex_lock(&s->mutex);
  const uint64_t number = ++s->enqueued;
  if (s->tail)
    s->tail->next = n;
  else
    s->head = n;
  s->tail = n;
  pthread_cond_signal(&s->work);
  pthread_mutex_unlock(&s->mutex);
  atomic_fetch_add(&s->ops_queued, 1);
  if (seq) *seq = number;
  return 0;
}

uint64_t hostdev_stream_enqueued(hd_stream* s) {
  pthread_mutex_lock(&s->mutex);
  const uint64_t n = s->enqueued;
  pthread_mutex_unlock(&s->mutex);
  return n;
}

void hostdev_stream_fail(hd_stream* s, const char* message) {
  pthread_mutex_lock(&s->mutex);
  if (!s->has_error) {
    s->has_error = 1;
    snprintf(s->error, sizeof s->error, "%s", message);
  }
  pthread_mutex_unlock(&s->mutex);
  hostdev_count(s->device, HD_C_STREAM_ERRORS, 1);
}

int hostdev_stream_wait(const char* function, hd_stream* s, uint64_t seq) {
  char error[sizeof s->error];
  int failed = 0;
  pthread_mutex_lock(&s->mutex);
  const uint64_t target = seq == UINT64_MAX ? s->enqueued : seq;
  while (s->completed < target) pthread_cond_wait(&s->done, &s->mutex);
  if (s->has_error) {
    failed = 1;
    memcpy(error, s->error, sizeof error);
    s->has_error = 0;
  }
  pthread_mutex_unlock(&s->mutex);
  if (failed) {
    return hostdev_fail("hostdev %s(): an earlier operation on stream %lld of hostdev:%d failed: %s", function,
                        (long long)s->id, (int)s->device, error);
  }
  return 0;
}

int hostdev_synchronize_device(const char* function, int32_t index) {
  int rc = 0;
  const int64_t n = atomic_load(&g_stream_count);
  for (int64_t i = 0; i < n; ++i) {
    hd_stream* s = g_streams[i];
    if (s->device == index && hostdev_stream_wait(function, s, UINT64_MAX) != 0) rc = 1;
  }
  return rc;
}

/* ---- events ---- */

typedef struct event_slot {
  int live;
  uint16_t generation;
  int32_t device;
  hd_stream* stream; /* NULL until recorded */
  uint64_t seq;
} event_slot;

static pthread_mutex_t g_events_mutex = PTHREAD_MUTEX_INITIALIZER;
static event_slot g_events[MAX_EVENTS];

static void* event_handle(uint32_t i) {
  return (void*)(uintptr_t)(EVENT_TAG | ((uint64_t)i << 16) | g_events[i].generation);
}

/* The live event slot of `event` on device `index` (g_events_mutex held), or UINT32_MAX. */
static uint32_t event_lookup(int32_t index, void* event) {
  const uint64_t h = (uint64_t)(uintptr_t)event;
  if ((h & EVENT_TAG_MASK) != EVENT_TAG) return UINT32_MAX;
  const uint64_t i = (h >> 16) & 0xffffffffull;
  if (i >= MAX_EVENTS || !g_events[i].live || g_events[i].generation != (uint16_t)(h & 0xffffu) ||
      g_events[i].device != index)
    return UINT32_MAX;
  return (uint32_t)i;
}

static int bad_event(int32_t index, const char* function, void* event) {
  return hostdev_bad_handle(index, function,
                            "%p is not a live hostdev event of hostdev:%d (destroyed already, "
                            "or from event_create of another device?)",
                            event, (int)index);
}

int hostdev_event_create(int32_t index, void** event) {
  pthread_mutex_lock(&g_events_mutex);
  for (uint32_t i = 0; i < MAX_EVENTS; ++i) {
    if (!g_events[i].live) {
      g_events[i].live = 1;
      g_events[i].device = index;
      g_events[i].stream = NULL;
      g_events[i].seq = 0;
      *event = event_handle(i);
      pthread_mutex_unlock(&g_events_mutex);
      hostdev_count(index, HD_C_EVENTS_CREATED, 1);
      return 0;
    }
  }
  pthread_mutex_unlock(&g_events_mutex);
  return hostdev_fail("hostdev event_create(): all %d hostdev events are in use; destroy events", MAX_EVENTS);
}

void hostdev_event_destroy(int32_t index, void* event) {
  pthread_mutex_lock(&g_events_mutex);
  const uint32_t i = event_lookup(index, event);
  if (i != UINT32_MAX) {
    g_events[i].live = 0;
    g_events[i].generation += 1;
  }
  pthread_mutex_unlock(&g_events_mutex);
  if (i == UINT32_MAX)
    bad_event(index, "event_destroy", event);
  else
    hostdev_count(index, HD_C_EVENTS_DESTROYED, 1);
}

int hostdev_event_record(int32_t index, void* event, void* stream) {
  hd_stream* s = hostdev_stream_resolve("event_record", index, stream);
  if (!s) return 1;
  const uint64_t seq = hostdev_stream_enqueued(s); /* the work queued so far */
  pthread_mutex_lock(&g_events_mutex);
  const uint32_t i = event_lookup(index, event);
  if (i != UINT32_MAX) {
    g_events[i].stream = s;
    g_events[i].seq = seq;
  }
  pthread_mutex_unlock(&g_events_mutex);
  if (i == UINT32_MAX) return bad_event(index, "event_record", event);
  hostdev_count(index, HD_C_EVENTS_RECORDED, 1);
  return 0;
}

int hostdev_stream_wait_event(int32_t index, void* stream, void* event) {
  hd_stream* s = hostdev_stream_resolve("stream_wait_event", index, stream);
  if (!s) return 1;
  pthread_mutex_lock(&g_events_mutex);
  const uint32_t i = event_lookup(index, event);
  hd_stream* producer = i != UINT32_MAX ? g_events[i].stream : NULL;
  const uint64_t seq = i != UINT32_MAX ? g_events[i].seq : 0;
  pthread_mutex_unlock(&g_events_mutex);
  if (i == UINT32_MAX) return bad_event(index, "stream_wait_event", event);
  hostdev_count(index, HD_C_EVENTS_WAITED, 1);
  if (!producer || producer == s) return 0; /* never recorded, or the same stream: nothing to wait for */
  hd_op_args op;
  memset(&op, 0, sizeof op);
  op.kind = HD_OP_WAIT;
  op.counter_device = index;
  op.wait_for = producer;
  op.wait_seq = seq;
  return hostdev_enqueue(s, &op, NULL);
}

int hostdev_event_synchronize(int32_t index, void* event) {
  pthread_mutex_lock(&g_events_mutex);
  const uint32_t i = event_lookup(index, event);
  hd_stream* producer = i != UINT32_MAX ? g_events[i].stream : NULL;
  const uint64_t seq = i != UINT32_MAX ? g_events[i].seq : 0;
  pthread_mutex_unlock(&g_events_mutex);
  if (i == UINT32_MAX) return bad_event(index, "event_synchronize", event);
  hostdev_count(index, HD_C_EVENT_SYNCHRONIZES, 1);
  return producer ? hostdev_stream_wait("event_synchronize", producer, seq) : 0;
}
