#include "model/translator/engine_process.h"

#include "model/ops/blas_kernel.h"

namespace transerve {

void PrepareEngineProcess(char** argv) { EnsureFastBlasKernel(argv); }

}  // namespace transerve
