"""smetric.policies"""
