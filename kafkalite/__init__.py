"""kafkalite"""
