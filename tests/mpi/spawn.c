/* MPI_Comm_spawn: run with N ranks, the parents spawn 2 copies of this
 * program; each child gets a number from parent rank 0 over the
 * intercommunicator, prints "child C of 2 parent_size N got G" and sends
 * G + C back; parent 0 prints "parent got S from children" (S = the sum). */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (parent == MPI_COMM_NULL) {
        int errs[2], sum = 0, i, v;
        MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0,
                       MPI_COMM_WORLD, &inter, errs);
        if (rank == 0) {
            for (i = 0; i < 2; i++) {
                v = 40;
                MPI_Send(&v, 1, MPI_INT, i, 0, inter);
            }
            for (i = 0; i < 2; i++) {
                MPI_Recv(&v, 1, MPI_INT, i, 1, inter, MPI_STATUS_IGNORE);
                sum += v;
            }
            printf("parent got %d from children\n", sum);
        }
        MPI_Comm_disconnect(&inter);
    } else {
        int psize, v;
        MPI_Comm_remote_size(parent, &psize);
        MPI_Recv(&v, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
        printf("child %d of %d parent_size %d got %d\n", rank, size, psize, v);
        fflush(stdout);
        v += rank;
        MPI_Send(&v, 1, MPI_INT, 0, 1, parent);
        MPI_Comm_disconnect(&parent);
    }
    MPI_Finalize();
    return 0;
}
