/* build/attach-trigger-so: runs the trigger from build/libattach-trigger.so. */
int attach_trigger_main(int argc, char **argv);

int main(int argc, char **argv)
{
	return attach_trigger_main(argc, argv);
}
