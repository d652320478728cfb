/* slimtensor/c/aoti_host.h: what a host that runs AOTI models calls beyond the shims: the model owner and
 * the DLPack bridge between AOTI handles and any DLPack producer or consumer.
 *
 * Note [DLPack bridge]
 * slimtensor_aoti_handle_from_dlpack(_versioned) takes ownership of a DLManagedTensor(Versioned) and
 * returns a handle over its memory (a borrowed storage whose deleter calls the producer's deleter once the
 * last tensor, view or handle is gone); on failure the producer's deleter has been called. A legacy
 * DLManagedTensor cannot say read-only: the host that hands one over vouches that it is writable. The
 * versioned form honours DLPACK_FLAG_BITMASK_READ_ONLY.
 * slimtensor_aoti_handle_to_dlpack(_versioned) steals a handle and returns a managed tensor over its
 * tensor, which lives until the consumer calls the deleter; on failure it returns NULL and the handle is
 * still the caller's. The legacy form refuses a read-only tensor (it could not say so).
 * Both go through the core's one DLPack codec (the same checks and codes as Tensor.__dlpack__ and
 * slimtensor.from_dlpack). The managed tensors are the DLPack 1.1 structures; `void*` here so that this
 * header needs no dlpack.h.
 */
#ifndef SLIMTENSOR_C_AOTI_HOST_H_
#define SLIMTENSOR_C_AOTI_HOST_H_

#include "slimtensor/c/shim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- DLPack bridge (Note [DLPack bridge]) ------------------------------------------------------- */
SLIMTENSOR_C_API AOTITorchError slimtensor_aoti_handle_from_dlpack(void* managed, AtenTensorHandle* ret);
SLIMTENSOR_C_API AOTITorchError slimtensor_aoti_handle_from_dlpack_versioned(void* managed, AtenTensorHandle* ret);
SLIMTENSOR_C_API void* slimtensor_aoti_handle_to_dlpack(AtenTensorHandle handle);
SLIMTENSOR_C_API void* slimtensor_aoti_handle_to_dlpack_versioned(AtenTensorHandle handle);
/* Calls a managed tensor's deleter (for a host that could not hand it to a consumer); NULL is ignored. */
SLIMTENSOR_C_API void slimtensor_aoti_dlpack_delete(void* managed);
SLIMTENSOR_C_API void slimtensor_aoti_dlpack_versioned_delete(void* managed);

/* ---- model owner (Note [Model owner] in the sources, src/aoti/model_owner.h) --------------------- */
typedef int32_t (*slimtensor_model_release_fn)(void* container);
/* A new owner with one reference; `release(container)` runs when the last reference goes. */
SLIMTENSOR_C_API void* slimtensor_aoti_owner_new(slimtensor_model_release_fn release, void* container);
/* Sets the container the owner deletes (once it exists). */
SLIMTENSOR_C_API void slimtensor_aoti_owner_set_container(void* owner, void* container);
/* Sets (or, with NULL, clears) the owner entered on this thread. */
SLIMTENSOR_C_API void slimtensor_aoti_owner_enter(void* owner);
/* Drops one reference (the host's, at close()). */
SLIMTENSOR_C_API void slimtensor_aoti_owner_release(void* owner);
/* If `output`'s storage is one of the owner's, re-makes it over an owner-pinning storage; returns 1 if it
 * did, 0 if the output does not alias the model's memory, -1 on error (slimtensor_last_error()). */
SLIMTENSOR_C_API int32_t slimtensor_aoti_owner_adopt_output(void* owner, AtenTensorHandle output);
/* References held on the owner now (1 for the open model + one per adopted output storage alive). */
SLIMTENSOR_C_API int64_t slimtensor_aoti_owner_refs(void* owner);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLIMTENSOR_C_AOTI_HOST_H_ */
