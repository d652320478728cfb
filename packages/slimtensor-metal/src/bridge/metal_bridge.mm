// metal_bridge.mm: the only Objective-C++ of the plugin: mtlb_api (metal_bridge.h) over Apple's Metal and
// MetalPerformanceShaders. Never compiled or run off Apple platforms (see the package README).
//
// Note [Bridge reference counting]
// This file is compiled WITHOUT ARC (-fno-objc-arc, manual retain/release), chosen once for the whole
// bridge: every object crosses a C interface as a raw pointer with explicit +1 ownership (Note [Bridge
// ownership] in metal_bridge.h), which manual retain/release states directly, where ARC would need a
// __bridge_retained / __bridge_transfer cast at every crossing and hide the balance. The rules applied:
//   - methods named new... / alloc+init... return +1 (Cocoa's ownership rule): handed out as they are;
//   - other getters (commandBuffer, computeCommandEncoder, blitCommandEncoder, MTLCopyAllDevices'
//     elements) return autoreleased objects: retained once before they are handed out;
//   - every function runs in an @autoreleasepool, since the plugin calls from threads without one and
//     Metal autoreleases internally (error objects, descriptors);
//   - mtlb_release sends exactly one `release`.
// Objects a command buffer uses (buffers bound with setBuffer, pipelines, shared events, MPS kernels) are
// retained by the command buffer until it completes (command buffers made with -commandBuffer retain
// their references), so the plugin may release or recycle them once the work is encoded.
#if !defined(__APPLE__)
#  error "metal_bridge.mm is the Apple implementation of metal_bridge.h; it is compiled on Apple platforms only"
#endif
#if __has_feature(objc_arc)
#  error "metal_bridge.mm uses manual retain/release (Note [Bridge reference counting]): compile with -fno-objc-arc"
#endif

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>

#include <cstdio>
#include <cstring>

#include "metal_bridge.h"

namespace {

void write_err(char* err, size_t n, const char* fmt, const char* detail) {
  if (err && n) std::snprintf(err, n, fmt, detail ? detail : "no description");
}

void write_nserror(char* err, size_t n, const char* what, NSError* e) {
  write_err(err, n, what, e ? [[e localizedDescription] UTF8String] : "no NSError returned");
}

void b_release(void* object) {
  if (object) [(id)object release];
}

int b_create_device(void** device, char* err, size_t n) {
  @autoreleasepool {
    // MTLCreateSystemDefaultDevice follows the Create rule: +1, or nil when the Mac has no Metal GPU
    // (GitHub's hosted macOS runners, a VM without paravirtualised graphics).
    id<MTLDevice> d = MTLCreateSystemDefaultDevice();
    if (!d) {
      write_err(err, n, "%s", "MTLCreateSystemDefaultDevice returned nil (no Metal GPU on this machine)");
      return 1;
    }
    *device = d;
    return 0;
  }
}

void b_device_name(void* device, char* out, size_t n) {
  @autoreleasepool {
    NSString* s = [(id<MTLDevice>)device name];  // autoreleased, copied out before the pool drains
    std::snprintf(out, n, "%s", s ? [s UTF8String] : "");
  }
}

uint64_t b_max_buffer_length(void* device) { return [(id<MTLDevice>)device maxBufferLength]; }

int b_new_buffer(void* device, uint64_t length, void** buffer, char* err, size_t n) {
  @autoreleasepool {
    // newBufferWithLength:options: returns +1; shared storage: CPU and GPU see the same memory, no
    // synchronisation calls are needed beyond ordering (contents is valid for the buffer's lifetime).
    id<MTLBuffer> b = [(id<MTLDevice>)device newBufferWithLength:(NSUInteger)length
                                                         options:MTLResourceStorageModeShared];
    if (!b) {
      write_err(err, n, "%s", "newBufferWithLength:options: returned nil (out of GPU memory?)");
      return 1;
    }
    *buffer = b;
    return 0;
  }
}

void* b_buffer_contents(void* buffer) { return [(id<MTLBuffer>)buffer contents]; }

uint64_t b_buffer_length(void* buffer) { return [(id<MTLBuffer>)buffer length]; }

int b_is_shared_buffer(void* object) {
  @autoreleasepool {
    id o = (id)object;
    if (!o || ![o conformsToProtocol:@protocol(MTLBuffer)]) return 0;
    return [(id<MTLBuffer>)o storageMode] == MTLStorageModeShared ? 1 : 0;
  }
}

int b_new_command_queue(void* device, void** queue, char* err, size_t n) {
  @autoreleasepool {
    id<MTLCommandQueue> q = [(id<MTLDevice>)device newCommandQueue];  // +1
    if (!q) {
      write_err(err, n, "%s", "newCommandQueue returned nil");
      return 1;
    }
    *queue = q;
    return 0;
  }
}

int b_new_command_buffer(void* queue, void** cb, char* err, size_t n) {
  @autoreleasepool {
    // commandBuffer returns an autoreleased buffer that retains its references: retained to hand out +1.
    id<MTLCommandBuffer> c = [(id<MTLCommandQueue>)queue commandBuffer];
    if (!c) {
      write_err(err, n, "%s", "[MTLCommandQueue commandBuffer] returned nil");
      return 1;
    }
    *cb = [c retain];
    return 0;
  }
}

void b_commit(void* cb) { [(id<MTLCommandBuffer>)cb commit]; }

int b_wait(void* cb, char* err, size_t n) {
  @autoreleasepool {
    id<MTLCommandBuffer> c = (id<MTLCommandBuffer>)cb;
    [c waitUntilCompleted];
    if ([c status] == MTLCommandBufferStatusError) {
      write_nserror(err, n, "the command buffer failed: %s", [c error]);
      return 1;
    }
    return 0;
  }
}

int b_status(void* cb) {
  const MTLCommandBufferStatus s = [(id<MTLCommandBuffer>)cb status];
  if (s == MTLCommandBufferStatusCompleted) return MTLB_STATUS_COMPLETED;
  if (s == MTLCommandBufferStatusError) return MTLB_STATUS_ERROR;
  return MTLB_STATUS_PENDING;
}

int b_blit_copy(void* cb, void* src, uint64_t so, void* dst, uint64_t dof, uint64_t size, char* err, size_t n) {
  @autoreleasepool {
    id<MTLBlitCommandEncoder> e = [(id<MTLCommandBuffer>)cb blitCommandEncoder];  // autoreleased, used here only
    if (!e) {
      write_err(err, n, "%s", "blitCommandEncoder returned nil");
      return 1;
    }
    [e copyFromBuffer:(id<MTLBuffer>)src
             sourceOffset:(NSUInteger)so
                 toBuffer:(id<MTLBuffer>)dst
        destinationOffset:(NSUInteger)dof
                     size:(NSUInteger)size];
    [e endEncoding];
    return 0;
  }
}

int b_blit_fill(void* cb, void* buffer, uint64_t off, uint64_t size, uint8_t value, char* err, size_t n) {
  @autoreleasepool {
    id<MTLBlitCommandEncoder> e = [(id<MTLCommandBuffer>)cb blitCommandEncoder];
    if (!e) {
      write_err(err, n, "%s", "blitCommandEncoder returned nil");
      return 1;
    }
    [e fillBuffer:(id<MTLBuffer>)buffer range:NSMakeRange((NSUInteger)off, (NSUInteger)size) value:value];
    [e endEncoding];
    return 0;
  }
}

int b_compile_library(void* device, const char* source, void** library, char* err, size_t n) {
  @autoreleasepool {
    MTLCompileOptions* opts = [[MTLCompileOptions alloc] init];  // +1, released below
    // Exact IEEE behaviour (NaN, denormals) for the plugin's conversions and for Inductor's kernels,
    // as torch compiles its dynamic libraries.
    opts.fastMathEnabled = NO;
    NSError* e = nil;                                        // autoreleased when set
    NSString* src = [NSString stringWithUTF8String:source];  // autoreleased
    id<MTLLibrary> lib = src ? [(id<MTLDevice>)device newLibraryWithSource:src options:opts error:&e] : nil;  // +1
    [opts release];
    if (!lib) {
      write_nserror(err, n, "newLibraryWithSource failed: %s", e);
      return 1;
    }
    *library = lib;
    return 0;
  }
}

int b_new_pipeline(void* device, void* library, const char* name, void** pipeline, uint32_t* max_threads,
                   uint32_t* simd_width, char* err, size_t n) {
  @autoreleasepool {
    NSString* fname = [NSString stringWithUTF8String:name];
    id<MTLFunction> f = fname ? [(id<MTLLibrary>)library newFunctionWithName:fname] : nil;  // +1
    if (!f) {
      write_err(err, n, "no function named '%s' in the library", name);
      return 1;
    }
    NSError* e = nil;
    id<MTLComputePipelineState> p = [(id<MTLDevice>)device newComputePipelineStateWithFunction:f error:&e];  // +1
    [f release];  // the pipeline keeps what it needs
    if (!p) {
      write_nserror(err, n, "newComputePipelineStateWithFunction failed: %s", e);
      return 1;
    }
    *max_threads = (uint32_t)[p maxTotalThreadsPerThreadgroup];
    *simd_width = (uint32_t)[p threadExecutionWidth];
    *pipeline = p;
    return 0;
  }
}

int b_new_compute_encoder(void* cb, void** encoder, char* err, size_t n) {
  @autoreleasepool {
    id<MTLComputeCommandEncoder> e = [(id<MTLCommandBuffer>)cb computeCommandEncoder];  // autoreleased
    if (!e) {
      write_err(err, n, "%s", "computeCommandEncoder returned nil");
      return 1;
    }
    *encoder = [e retain];  // +1: it outlives this pool (kernels share the open encoder)
    return 0;
  }
}

void b_set_pipeline(void* enc, void* pso) {
  [(id<MTLComputeCommandEncoder>)enc setComputePipelineState:(id<MTLComputePipelineState>)pso];
}

void b_set_buffer(void* enc, void* buffer, uint64_t offset, uint32_t index) {
  [(id<MTLComputeCommandEncoder>)enc setBuffer:(id<MTLBuffer>)buffer offset:(NSUInteger)offset atIndex:index];
}

void b_set_bytes(void* enc, const void* bytes, uint64_t length, uint32_t index) {
  // setBytes copies the bytes at once (documented for data under 4 KB), so `bytes` may be a stack value.
  [(id<MTLComputeCommandEncoder>)enc setBytes:bytes length:(NSUInteger)length atIndex:index];
}

void b_dispatch_threads(void* enc, const uint64_t grid[3], const uint64_t group[3]) {
  [(id<MTLComputeCommandEncoder>)enc dispatchThreads:MTLSizeMake(grid[0], grid[1], grid[2])
                               threadsPerThreadgroup:MTLSizeMake(group[0], group[1], group[2])];
}

void b_end_encoding(void* enc) { [(id<MTLComputeCommandEncoder>)enc endEncoding]; }

int b_new_shared_event(void* device, void** event, char* err, size_t n) {
  @autoreleasepool {
    id<MTLSharedEvent> e = [(id<MTLDevice>)device newSharedEvent];  // +1
    if (!e) {
      write_err(err, n, "%s", "newSharedEvent returned nil");
      return 1;
    }
    *event = e;
    return 0;
  }
}

uint64_t b_event_signaled_value(void* event) { return [(id<MTLSharedEvent>)event signaledValue]; }

void b_encode_signal(void* cb, void* event, uint64_t value) {
  [(id<MTLCommandBuffer>)cb encodeSignalEvent:(id<MTLSharedEvent>)event value:value];
}

void b_encode_wait(void* cb, void* event, uint64_t value) {
  [(id<MTLCommandBuffer>)cb encodeWaitForEvent:(id<MTLSharedEvent>)event value:value];
}

int b_matmul(void* device, void* cb, const mtlb_matmul_desc* d, char* err, size_t n) {
  @autoreleasepool {
    MPSDataType dt;
    if (d->dtype == 6) {
      dt = MPSDataTypeFloat32;
    } else if (d->dtype == 5) {
      dt = MPSDataTypeFloat16;
    } else {
      write_err(err, n, "%s", "MPSMatrixMultiplication takes float32 or float16 only");
      return 1;
    }
    id<MTLDevice> dev = (id<MTLDevice>)device;
    if (!MPSSupportsMTLDevice(dev)) {
      write_err(err, n, "%s", "MetalPerformanceShaders does not support this device");
      return 1;
    }
    const mtlb_matrix* ms[3] = {&d->a, &d->b, &d->c};
    MPSMatrix* mats[3] = {nil, nil, nil};
    for (int i = 0; i < 3; ++i) {
      // matrixDescriptorWithRows:... is autoreleased; initWithBuffer:offset:descriptor: is +1 (released below).
      MPSMatrixDescriptor* md = [MPSMatrixDescriptor matrixDescriptorWithRows:(NSUInteger)ms[i]->rows
                                                                      columns:(NSUInteger)ms[i]->cols
                                                                     matrices:(NSUInteger)d->batch
                                                                     rowBytes:(NSUInteger)ms[i]->row_bytes
                                                                  matrixBytes:(NSUInteger)ms[i]->matrix_bytes
                                                                     dataType:dt];
      mats[i] = [[MPSMatrix alloc] initWithBuffer:(id<MTLBuffer>)ms[i]->buffer
                                           offset:(NSUInteger)ms[i]->offset
                                       descriptor:md];
    }
    MPSMatrixMultiplication* mm = [[MPSMatrixMultiplication alloc] initWithDevice:dev
                                                                    transposeLeft:d->transpose_a ? YES : NO
                                                                   transposeRight:d->transpose_b ? YES : NO
                                                                       resultRows:(NSUInteger)d->m
                                                                    resultColumns:(NSUInteger)d->n
                                                                  interiorColumns:(NSUInteger)d->k
                                                                            alpha:d->alpha
                                                                             beta:d->beta];  // +1
    mm.batchStart = 0;
    mm.batchSize = (NSUInteger)d->batch;
    [mm encodeToCommandBuffer:(id<MTLCommandBuffer>)cb leftMatrix:mats[0] rightMatrix:mats[1] resultMatrix:mats[2]];
    // The command buffer retains what the encoded kernel uses; our references go now.
    [mm release];
    for (int i = 0; i < 3; ++i) [mats[i] release];
    return 0;
  }
}

const mtlb_api kApi = {
    b_release,
    b_create_device,
    b_device_name,
    b_max_buffer_length,
    b_new_buffer,
    b_buffer_contents,
    b_buffer_length,
    b_is_shared_buffer,
    b_new_command_queue,
    b_new_command_buffer,
    b_commit,
    b_wait,
    b_status,
    b_blit_copy,
    b_blit_fill,
    b_compile_library,
    b_new_pipeline,
    b_new_compute_encoder,
    b_set_pipeline,
    b_set_buffer,
    b_set_bytes,
    b_dispatch_threads,
    b_end_encoding,
    b_new_shared_event,
    b_event_signaled_value,
    b_encode_signal,
    b_encode_wait,
    b_matmul,
};

}  // namespace

extern "C" const mtlb_api* mtlb_system_api(void) { return &kApi; }
