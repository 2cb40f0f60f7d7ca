"""Starting and watching a runner from outside it: the detached process, the headless view."""
