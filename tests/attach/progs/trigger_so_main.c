/* trigger-so: runs the trigger from libattach-trigger.so (next to it). */
int attach_trigger_main(int argc, char **argv);

int main(int argc, char **argv)
{
	return attach_trigger_main(argc, argv);
}
