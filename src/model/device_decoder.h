// The shared decoder (decoder.h) on an OpenCL device (device/device.h): the same graph as the
// CPU's DecoderModel, step for step, with every operator a device kernel
// (device/device_kernels.h). At load the weights are uploaded once in the file's row layout (the
// device matmuls read GGUF rows), after which the file's pages are given back; the KV pool lives
// in device memory in KvCache's layout, installed as the cache's mirror (kv_cache.h) at the
// model's first step on that cache; each step uploads the token embeddings (looked up on the
// host), the RoPE angles and the batch's block tables, and reads back only the logits (or the
// final hidden rows). Sampling and constrained decoding stay on the host, unchanged.
// Not on the device yet, each refused with a clear kUnsupported: LoRA adapters, layer skipping
// (self-speculation), matmul-input observers (calibration); weights of types without a device
// matmul (named with the tensor).
// Thread-safety: see Model.
#pragma once

#include <memory>

#include "tessera/model/arch_traits.h"
#include "tessera/model/load_options.h"
#include "tessera/model/model.h"

namespace tessera::model {

// Opens OpenCL device `options.device`, builds the device kernels, validates every tensor as
// build_decoder does and uploads it. Errors: those of build_decoder; the device layer's (no
// OpenCL library: kUnavailable in one line; the device's memory: kResourceExhausted naming the
// tensor); kUnsupported for a weight type the device has no matmul for.
Result<std::unique_ptr<Model>> build_device_decoder(std::shared_ptr<const ModelFile> file,
                                                    const LoadOptions& options,
                                                    ModelConfig config, ArchTraits traits);

}  // namespace tessera::model
