/* Each rank adds its rank with MPI_Allreduce and says where it runs:
 * "rank R of N on NODE local L of M sum S" (NODE is PMIx's host name, M the
 * ranks MPI finds on its node). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, sum = 0, lrank, lsize;
    MPI_Comm node;
    const char *host = getenv("PMIX_HOSTNAME");

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &lsize);
    printf("rank %d of %d on %s local %d of %d sum %d\n", rank, size,
           host ? host : "?", lrank, lsize, sum);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
