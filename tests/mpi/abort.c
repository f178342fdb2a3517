/* Rank 1 calls MPI_Abort with status 3; the others wait in a barrier that
 * never completes. */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    sleep(60);
    MPI_Finalize();
    return 0;
}
