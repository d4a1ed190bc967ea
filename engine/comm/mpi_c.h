// <mpi.h> without Open MPI's C++ bindings: they need libmpi_cxx, which the
// build does not link (and nothing here uses them).
#pragma once

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
