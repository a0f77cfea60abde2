// What a program that runs the engine calls first thing in main(), before it starts a thread.
#pragma once

namespace transerve {

// Prepares the process for the engine: today, makes sure OpenBLAS runs its fast kernels for this
// CPU (which may re-execute the program with the same arguments; see model/ops/blas_kernel.h).
void PrepareEngineProcess(char** argv);

}  // namespace transerve
