/* The body of each layer's check executable (CMakeLists.txt, "the layers"):
 * the layer's whole archive is linked against its declared dependencies
 * alone, so a reference to a symbol of a higher layer fails the link. */
int main(void)
{
    return 0;
}
