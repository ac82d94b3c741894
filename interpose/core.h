// The one in-process core behind both entry shims (LD_PRELOAD constructor and CUDA_INJECTION64_PATH's
// InitializeInjection). Starting twice, by both routes at once, is a no-op the second time.
#pragma once

namespace asynccheck::core {

enum class Origin { Preload, Injection };

void start(Origin origin);

}  // namespace asynccheck::core
