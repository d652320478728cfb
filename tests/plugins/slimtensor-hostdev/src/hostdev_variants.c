/* hostdev_variants.c: st_plugin_init for the real hostdev device, its ABI 1.0 build, and broken plugins. */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "abi10/hostdev_abi10.h"
#include "hostdev.h"

/* Note [hostdev variants]
 * Besides the real device (ABI 1.1), the package carries hostdev_abi10 (built against the frozen 1.0 header,
 * Note [hostdev_abi10]; a core must load it) and plugins that a core must refuse without crashing: one built
 * for ABI major 99, one for a newer minor than the core's, one that says 1.1 but whose table ends before the
 * last 1.1 field (allocator_stats), one that says 1.1 but leaves the required allocate_v2 NULL, and one whose
 * init fails. Each broken table names a device of its own ("hostdev_bad_major", ...) so that a core that
 * wrongly accepted it would not collide with, or hide, the real hostdev. Tables live in static storage: the
 * ABI says they stay valid until exit. */
static st_device_table g_tables[HOSTDEV_VARIANT_COUNT];
static pthread_mutex_t g_ok_mutex = PTHREAD_MUTEX_INITIALIZER;
static int g_ok_built; /* guarded by g_ok_mutex */

/* hostdev converts through the core (Note [hostdev]): it needs the core table of ABI 1.1. */
static int check_core(const st_core_table* core) {
  if (!core) return hostdev_fail("hostdev st_plugin_init(): the core table is NULL");
  if (core->abi_major != ST_PLUGIN_ABI_MAJOR) {
    return hostdev_fail(
        "hostdev st_plugin_init(): slimtensor-core speaks plugin ABI %u.%u, hostdev was built "
        "for %d.%d; rebuild slimtensor-hostdev against the installed slimtensor-core",
        core->abi_major, core->abi_minor, ST_PLUGIN_ABI_MAJOR, ST_PLUGIN_ABI_MINOR);
  }
  if (core->abi_minor < 1 || core->struct_size < ST_CORE_TABLE_SIZE_1_1 || !core->convert || !core->convert_strided ||
      !core->core_last_error || !core->scalar_type_itemsize) {
    return hostdev_fail(
        "hostdev st_plugin_init(): hostdev needs the ABI 1.1 core table (convert, "
        "convert_strided) but slimtensor-core %s gives ABI %u.%u (%u bytes); upgrade the core: "
        "pip install -U slimtensor-core",
        core->core_version ? core->core_version : "?", core->abi_major, core->abi_minor, core->struct_size);
  }
  return 0;
}

static int init_variant(hostdev_variant variant, const st_core_table* core, const st_device_table** out) {
  if (!out) return hostdev_fail("hostdev st_plugin_init(): out must not be NULL");
  *out = NULL;
  if (check_core(core)) return 1;
  st_device_table* table = &g_tables[variant];
  if (variant == HOSTDEV_OK) {
    /* Built once: the core reads it from other threads while a second registration is being refused. */
    pthread_mutex_lock(&g_ok_mutex);
    int rc = g_ok_built ? 0 : hostdev_make_table(core, table);
    if (rc == 0 && !g_ok_built) {
      g_ok_built = 1;
      hostdev_publish_table(table);
    }
    pthread_mutex_unlock(&g_ok_mutex);
    if (rc == 0) *out = table;
    return rc;
  }
  if (hostdev_make_table(core, table)) return 1;
  switch (variant) {
    case HOSTDEV_BAD_MAJOR:
      table->abi_major = 99;
      table->name = "hostdev_bad_major";
      break;
    case HOSTDEV_BAD_MINOR:
      table->abi_minor = (uint16_t)(core->abi_minor + 1);
      table->name = "hostdev_bad_minor";
      break;
    case HOSTDEV_SMALL_STRUCT:
      table->struct_size = (uint32_t)(ST_DEVICE_TABLE_SIZE_1_1 - sizeof(void*));
      table->name = "hostdev_small_struct";
      break;
    case HOSTDEV_NO_V2_MEMORY:
      table->allocate_v2 = NULL;
      table->name = "hostdev_no_v2_memory";
      break;
    case HOSTDEV_INIT_FAILS:
      return hostdev_fail("hostdev st_plugin_init(): this variant always fails (a test of the core's refusal)");
    default: return hostdev_fail("hostdev st_plugin_init(): unknown variant %d", (int)variant);
  }
  *out = table;
  return 0;
}

static int init_ok(const st_core_table* c, const st_device_table** o) { return init_variant(HOSTDEV_OK, c, o); }
static int init_bad_major(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_BAD_MAJOR, c, o);
}
static int init_bad_minor(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_BAD_MINOR, c, o);
}
static int init_small_struct(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_SMALL_STRUCT, c, o);
}
static int init_no_v2_memory(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_NO_V2_MEMORY, c, o);
}
static int init_fails(const st_core_table* c, const st_device_table** o) {
  return init_variant(HOSTDEV_INIT_FAILS, c, o);
}

st_plugin_init_fn hostdev_init_function(hostdev_variant variant) {
  switch (variant) {
    case HOSTDEV_OK: return init_ok;
    case HOSTDEV_ABI10: {
      /* The 1.0 entry point has the same C signature; its structs are the 1.0 prefix of today's. */
      st_plugin_init_fn f;
      void* p = hostdev_abi10_init_address();
      memcpy(&f, &p, sizeof f);
      return f;
    }
    case HOSTDEV_BAD_MAJOR: return init_bad_major;
    case HOSTDEV_BAD_MINOR: return init_bad_minor;
    case HOSTDEV_SMALL_STRUCT: return init_small_struct;
    case HOSTDEV_NO_V2_MEMORY: return init_no_v2_memory;
    case HOSTDEV_INIT_FAILS: return init_fails;
    default: return NULL;
  }
}

const char* hostdev_variant_name(hostdev_variant variant) {
  static const char* const names[HOSTDEV_VARIANT_COUNT] = {"ok",           "abi10",        "bad_major", "bad_minor",
                                                           "small_struct", "no_v2_memory", "init_fails"};
  return (variant >= 0 && variant < HOSTDEV_VARIANT_COUNT) ? names[variant] : NULL;
}
